#include "sim/sweep/sweep_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <functional>

#include "common/atomic_file.h"
#include "common/json_util.h"
#include "sim/sweep/sweep_files.h"
#include "tests/sim/sweep/fake_sim.h"
#include "tests/test_util/temp_dir.h"

namespace capplan::sim::sweep {
namespace {

namespace fs = std::filesystem;
using testing::CountingRunner;
using testing::FakeBase;
using testing::FakeValidate;

// A path that does not exist yet, in the test's own scratch directory.
std::string FreshDir(const std::string& name) {
  const std::string p = test_util::TestTempPath(name);
  fs::remove_all(p);
  return p;
}

SweepPlan Plan(std::initializer_list<const char*> flags, nlohmann::json base = FakeBase()) {
  std::vector<GridAxis> axes;
  for (const char* f : flags) axes.push_back(ParseGridFlag(f).value());
  return BuildSweepPlan(base, "fake.json", axes, FakeValidate).value();
}

std::string Read(const std::string& path) { return ReadFile(path).value(); }

TEST(SweepRunnerTest, RunsEveryPointAndWritesCsv) {
  const std::string dir = FreshDir("all");
  CountingRunner runner;
  const SweepPlan plan = Plan({"deployment.tp=2,4", "workload.request_rate=1,2,4"});
  auto stats = RunSweep(plan, runner.Hooks(), {dir, 2, {}, nullptr});
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stats->points, 6);
  EXPECT_EQ(stats->ran, 6);
  EXPECT_TRUE(stats->merged);
  EXPECT_EQ(runner.calls.load(), 6);
  const std::string csv = Read(SweepCsvPath(dir));
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "point_id,deployment.tp,workload.request_rate,status,completed,failed,duration_s,"
            "request_throughput,output_throughput,output_throughput_per_gpu,mean_ttft_ms,"
            "p90_ttft_ms,p99_ttft_ms,mean_tpot_ms,p90_tpot_ms,p99_tpot_ms,p90_e2el_ms,gpus,"
            "kv_capacity_tokens,peak_kv_tokens,kv_bound,cost_usd_per_million_output_tokens");
  // Row for tp=4, rate=2 (index 4): throughput per GPU = 2 * 100 / 4 = 50.
  const std::string id = plan.points[4].id;
  const size_t row = csv.find(id);
  ASSERT_NE(row, std::string::npos);
  const std::string expected = id + ",4,2,ok,100,,,2.0,200.0,50.0,";
  EXPECT_EQ(csv.substr(row, expected.size()), expected);
  auto rec = ReadJsonFile(PointPath(dir, id));
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ((*rec)["summary"]["output_throughput_per_gpu"], 50.0);
  EXPECT_EQ((*rec)["base_scenario_id"], plan.base_id);
  // The manifest has one line per point.
  const std::string manifest = Read(ManifestPath(dir));
  EXPECT_EQ(std::count(manifest.begin(), manifest.end(), '\n'), 6);
}

TEST(SweepRunnerTest, ResumeSkipsFinishedPoints) {
  const std::string dir = FreshDir("resume");
  const SweepPlan plan = Plan({"deployment.tp=2,4", "workload.request_rate=1,2"});
  CountingRunner first;
  first.fail_tp = 4;  // the sweep dies on its first tp=4 point
  auto broken = RunSweep(plan, first.Hooks(), {dir, 1, {}, nullptr});
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("injected failure"), std::string::npos);
  EXPECT_NE(broken.status().message().find(plan.points[2].id), std::string::npos)
      << broken.status().message();
  EXPECT_TRUE(fs::exists(PointPath(dir, plan.points[0].id)));
  EXPECT_TRUE(fs::exists(PointPath(dir, plan.points[1].id)));
  EXPECT_FALSE(fs::exists(SweepCsvPath(dir)));

  CountingRunner second;
  auto resumed = RunSweep(plan, second.Hooks(), {dir, 1, {}, nullptr});
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  EXPECT_EQ(resumed->skipped, 2);
  EXPECT_EQ(resumed->ran, 2);
  EXPECT_EQ(second.calls.load(), 2);

  // A complete directory reruns nothing and rewrites an identical csv.
  const std::string csv = Read(SweepCsvPath(dir));
  CountingRunner third;
  auto again = RunSweep(plan, third.Hooks(), {dir, 2, {}, nullptr});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(third.calls.load(), 0);
  EXPECT_EQ(Read(SweepCsvPath(dir)), csv);

  // A torn or foreign file is recomputed, not trusted.
  ASSERT_TRUE(WriteFileAtomic(PointPath(dir, plan.points[3].id), "{\"point_id\": 1").ok());
  CountingRunner fourth;
  ASSERT_TRUE(RunSweep(plan, fourth.Hooks(), {dir, 1, {}, nullptr}).ok());
  EXPECT_EQ(fourth.calls.load(), 1);
}

TEST(SweepRunnerTest, AGrownGridOnlyRunsTheNewPoints) {
  const std::string dir = FreshDir("grow");
  CountingRunner a, b;
  ASSERT_TRUE(RunSweep(Plan({"deployment.tp=2,4"}), a.Hooks(), {dir, 1, {}, nullptr}).ok());
  auto grown = RunSweep(Plan({"deployment.tp=2,4,8"}), b.Hooks(), {dir, 1, {}, nullptr});
  ASSERT_TRUE(grown.ok());
  EXPECT_EQ(b.calls.load(), 1);
}

TEST(SweepRunnerTest, RefusesResultsOfAnotherScenario) {
  const std::string dir = FreshDir("foreign");
  CountingRunner a, b;
  ASSERT_TRUE(RunSweep(Plan({"deployment.tp=2,4"}), a.Hooks(), {dir, 1, {}, nullptr}).ok());
  nlohmann::json other = FakeBase();
  other["seed"] = 2;
  auto r = RunSweep(Plan({"deployment.tp=2,4"}, other), b.Hooks(), {dir, 1, {}, nullptr});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUsage);
  EXPECT_NE(r.status().message().find("fresh --out"), std::string::npos);
}

TEST(SweepRunnerTest, ShardsThenMergeEqualsOneProcess) {
  const SweepPlan plan = Plan({"deployment.tp=2,3,4", "workload.request_rate=1,2,4,8"});
  const std::string single = FreshDir("single");
  CountingRunner one;
  ASSERT_TRUE(RunSweep(plan, one.Hooks(), {single, 2, {}, nullptr}).ok());

  const std::string sharded = FreshDir("sharded");
  int total_ran = 0;
  for (int i = 0; i < 5; ++i) {
    CountingRunner r;
    ShardSpec shard{i, 5, "flags"};
    auto stats = RunSweep(plan, r.Hooks(), {sharded, 1, shard, nullptr});
    ASSERT_TRUE(stats.ok()) << stats.status().message();
    EXPECT_FALSE(stats->merged);
    total_ran += static_cast<int>(stats->ran);
    if (i == 2) {
      auto early = MergeSweep(sharded);  // shards 3 and 4 still missing
      ASSERT_FALSE(early.ok());
      EXPECT_NE(early.status().message().find("have no result yet"), std::string::npos);
    }
  }
  EXPECT_EQ(total_ran, 12);
  auto merged = MergeSweep(sharded);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(merged->points, 12);
  EXPECT_EQ(merged->invalid, 4);  // tp=3 does not divide 64 heads
  EXPECT_EQ(Read(SweepCsvPath(sharded)), Read(SweepCsvPath(single)));
  for (const SweepPoint& p : plan.points) {
    EXPECT_EQ(Read(PointPath(sharded, p.id)), Read(PointPath(single, p.id)));
  }
}

TEST(SweepRunnerTest, InvalidPointsAreRecordedNotRun) {
  const std::string dir = FreshDir("invalid");
  CountingRunner r;
  const SweepPlan plan = Plan({"deployment.tp=2,3"});
  auto stats = RunSweep(plan, r.Hooks(), {dir, 1, {}, nullptr});
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->invalid, 1);
  EXPECT_EQ(r.calls.load(), 1);
  auto rec = ReadJsonFile(PointPath(dir, plan.points[1].id)).value();
  EXPECT_EQ(rec["status"], "invalid");
  EXPECT_NE(rec["error"].get<std::string>().find("does not divide"), std::string::npos);
  EXPECT_NE(Read(SweepCsvPath(dir)).find(",3,invalid,"), std::string::npos);
}

TEST(SweepRunnerTest, PointsParsedOnlyByTheirRunStillRecordInvalid) {
  // PointChecks::kAxisValuesOnly (capplan sweep): the plan parses each grid
  // value alone; the full point is parsed once, by its run.
  const std::string dir = FreshDir("once");
  std::atomic<int> validations{0}, runs{0};
  SimHooks hooks;
  hooks.validate = [&](const nlohmann::json& doc) {
    ++validations;
    return FakeValidate(doc);
  };
  hooks.run = [&](const nlohmann::json& doc) -> Result<schema::RunSummary> {
    ++runs;
    CAPPLAN_RETURN_IF_ERROR(FakeValidate(doc));
    return schema::FromJson(testing::FakeSummary(doc), "fake summary");
  };
  std::vector<GridAxis> axes = {ParseGridFlag("deployment.tp=2,3").value(),
                                ParseGridFlag("workload.request_rate=1,2").value()};
  auto plan = BuildSweepPlan(FakeBase(), "fake.json", axes, hooks.validate,
                             PointChecks::kAxisValuesOnly);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(validations.load(), 4);  // the four grid values, no full point
  for (const SweepPoint& p : plan->points) EXPECT_TRUE(p.invalid.empty());
  auto stats = RunSweep(*plan, hooks, {dir, 2, {}, nullptr});
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(validations.load(), 4);
  EXPECT_EQ(runs.load(), 4);
  EXPECT_EQ(stats->invalid, 2);  // tp=3 at both rates
  auto rec = ReadJsonFile(PointPath(dir, plan->points[2].id)).value();
  EXPECT_EQ(rec["status"], "invalid");
  EXPECT_NE(rec["error"].get<std::string>().find("does not divide"), std::string::npos);
}

TEST(SweepRunnerTest, PlanOnlyWritesTheManifest) {
  const std::string dir = FreshDir("plan");
  const SweepPlan plan = Plan({"deployment.tp=2,4"});
  ASSERT_TRUE(WriteSweepManifest(plan, dir).ok());
  auto entries = ReadManifest(ManifestPath(dir));
  ASSERT_TRUE(entries.ok()) << entries.status().message();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[1].point_id, plan.points[1].id);
  EXPECT_EQ((*entries)[1].grid[0].second, 4);
  EXPECT_FALSE(fs::exists(PointPath(dir, plan.points[0].id)));
}

// A point file edited by hand or written by another version: every field is
// checked before the merge indexes into it.
TEST(SweepRunnerTest, MalformedPointFilesAreErrorsNotOverreads) {
  const SweepPlan plan = Plan({"deployment.tp=2,4", "workload.request_rate=1,2"});
  struct Case {
    const char* what;
    std::function<void(nlohmann::json&)> edit;
    const char* field;
  };
  const Case cases[] = {
      {"grid pair without its value", [](nlohmann::json& r) { r["grid"][1].erase(1); }, "/grid"},
      {"grid not an array", [](nlohmann::json& r) { r["grid"] = 7; }, "/grid"},
      {"grid missing", [](nlohmann::json& r) { r.erase("grid"); }, "/grid"},
      {"grid path not a string", [](nlohmann::json& r) { r["grid"][0][0] = 1; }, "/grid"},
      {"status wrong type", [](nlohmann::json& r) { r["status"] = 1; }, "/status"},
      {"summary wrong type", [](nlohmann::json& r) { r["summary"] = "x"; }, "/summary"},
      {"index wrong type", [](nlohmann::json& r) { r["index"] = "0"; }, "/index"},
  };
  for (const Case& c : cases) {
    const std::string dir = FreshDir("malformed");
    CountingRunner runner;
    ASSERT_TRUE(RunSweep(plan, runner.Hooks(), {dir, 1, {}, nullptr}).ok());
    const std::string path = PointPath(dir, plan.points[1].id);
    nlohmann::json rec = ReadJsonFile(path).value();
    c.edit(rec);
    ASSERT_TRUE(WriteFileAtomic(path, DumpJson(rec)).ok());
    auto merged = MergeSweep(dir);
    ASSERT_FALSE(merged.ok()) << c.what;
    EXPECT_EQ(merged.status().code(), StatusCode::kUsage) << c.what;
    EXPECT_NE(merged.status().message().find(path + ": " + c.field), std::string::npos)
        << c.what << ": " << merged.status().message();
  }
}

TEST(SweepRunnerTest, SweepCsvToleratesShortGridPairs) {
  nlohmann::json rec = {{"point_id", "p"}, {"grid", {{"a"}, 5}}, {"status", "ok"}};
  EXPECT_EQ(SweepCsv({"a", "b", "c"}, {rec}).substr(SweepCsv({"a", "b", "c"}, {}).size()),
            "p,,,,ok" + std::string(SweepCsvMetrics().size(), ',') + "\n");
}

}  // namespace
}  // namespace capplan::sim::sweep
