#include "report/summary.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/test_util/temp_dir.h"

namespace capplan::report {
namespace {

const std::string kData = REPORT_TEST_DATA;

TEST(ReportSummary, ReadsThePinnedKeys) {
  auto r = LoadResults({kData + "/kimi_fp8_kv_c64.json"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  const Summary& s = r->front();
  EXPECT_EQ(s.id, "fp8 KV");
  EXPECT_EQ(s.model, "kimi-k2.6");
  EXPECT_EQ(s.profile_name, "h200-sxm");
  EXPECT_EQ(s.DeploymentField("kv_cache"), "fp8_e4m3");
  EXPECT_EQ(s.DeploymentField("tp"), "8");
  EXPECT_EQ(s.gpus, 8);
  ASSERT_TRUE(s.concurrency.has_value());
  EXPECT_EQ(*s.concurrency, 64);
  EXPECT_EQ(s.concurrency_source, "workload.max_concurrency");
  EXPECT_DOUBLE_EQ(s.output_throughput, 3200);
  EXPECT_DOUBLE_EQ(s.latency_ms.at("p99_tpot"), 32);
  ASSERT_TRUE(s.memory.has_value());
  EXPECT_EQ(s.memory->weights_by_component.size(), 3u);
  EXPECT_DOUBLE_EQ(s.memory->weights_by_component.at("experts"), 60e9);
  EXPECT_DOUBLE_EQ(s.slo_ms.at("tpot_ms"), 30);
  EXPECT_DOUBLE_EQ(s.bound_time_share.at("memory"), 0.6);
}

TEST(ReportSummary, OtherJsonIsRejectedAsNotASummary) {
  auto r = LoadResults({kData + "/not_a_summary.json"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ExitCode(), 2);
  EXPECT_NE(r.status().message().find("not_a_summary.json: /output_throughput: required field is "
                                      "missing; not a simulation summary"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
}

TEST(ReportSummary, WrongTypeNamesFileAndJsonPath) {
  auto r = LoadResults({kData + "/bad_type.json"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bad_type.json: /output_throughput: must be a number"),
            std::string::npos)
      << r.status().message();
}

TEST(ReportSummary, MissingFileIsNotFound) {
  auto r = LoadResults({kData + "/no_such_result.json"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("no_such_result.json: no such file"), std::string::npos);
}

TEST(ReportSummary, NoInputsIsUsage) {
  auto r = LoadResults({});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ExitCode(), 2);
}

// The fixture is laid out as `capplan sweep --out` writes: manifest.jsonl,
// one point file per point wrapping its summary, and two invalid points.
TEST(ReportSummary, SweepDirectoryLoadsItsValidPointsInManifestOrder) {
  auto r = LoadResults({kData + "/sweep"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_NE((*r)[0].origin.find("14ad2da943ae.json /summary"), std::string::npos) << (*r)[0].origin;
  EXPECT_NE((*r)[3].origin.find("3451061ed961.json /summary"), std::string::npos) << (*r)[3].origin;
}

TEST(ReportSummary, SweepPointFilesAreCheckedFieldByField) {
  const std::filesystem::path dir = test_util::TestTempPath("sweep_bad");
  std::filesystem::copy(kData + "/sweep", dir);
  const auto point = dir / "9454529ddf78.json";
  auto doc = nlohmann::json::parse(std::ifstream(point));
  doc.erase("summary");
  std::ofstream(point) << doc.dump();
  auto r = LoadResults({dir.string()});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("9454529ddf78.json: /summary: missing"), std::string::npos)
      << r.status().message();
  doc["status"] = 1;
  std::ofstream(point) << doc.dump();
  r = LoadResults({dir.string()});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/status"), std::string::npos) << r.status().message();
  std::filesystem::remove(point);
  r = LoadResults({dir.string()});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("1 of 6 sweep points have no file yet"), std::string::npos)
      << r.status().message();
}

TEST(ReportSummary, SimulateDirectoryUsesItsSummaryJson) {
  const std::filesystem::path dir = test_util::TestTempDir();
  std::filesystem::copy_file(kData + "/kimi_bf16_kv_c16.json", dir / "summary.json",
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir / "requests.json") << "[]";  // would be rejected if read
  auto r = LoadResults({dir.string()});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(r->front().id, "bf16 KV");
}

TEST(ReportSummary, MalformedJsonNamesLine) {
  const std::string path = test_util::TestTempPath("malformed.json");
  std::ofstream(path) << "{\n  \"gpus\": 8,\n  \"deployment\": }\n";
  auto r = LoadResults({path});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 3"), std::string::npos) << r.status().message();
}

// A `capplan search --out` directory stands for its winner's summary,
// labelled with the configuration and rate; inputs keep their order around
// it; a search without a winner says so with the JSON path.
TEST(ReportSummary, SearchDirectoryIsItsWinner) {
  namespace fs = std::filesystem;
  const fs::path dir = test_util::TestTempDir();
  nlohmann::json summary;
  std::ifstream(kData + "/pd/pd_demo.json") >> summary;
  nlohmann::json search = {
      {"winner",
       {{"config", {{"pd.decode.replicas", 2}, {"pd.decode.weights", "int4"}}},
        {"request_rate_req_per_s", 2.8333},
        {"summary", summary}}}};
  std::ofstream(dir / "search.json") << search.dump();
  auto r = LoadResults({kData + "/kimi_fp8_kv_c64.json", dir.string(),
                        kData + "/pd/pd_demo_colocated.json"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].id, "fp8 KV");
  EXPECT_EQ((*r)[1].id, summary["scenario"].get<std::string>() +
                            " best at SLO (pd.decode.replicas=2 pd.decode.weights=int4, 2.83 req/s)");
  EXPECT_EQ((*r)[1].scenario, summary["scenario"].get<std::string>()) << "pairs with its twin by name";
  EXPECT_TRUE((*r)[1].pd.has_value());
  EXPECT_EQ((*r)[2].scenario, "pd-demo-colocated");

  // A search of a session rate labels its rate in the search's unit.
  search["rate_unit"] = "sessions/s";
  search["winner"]["request_rate_req_per_s"] = 0.11;
  std::ofstream(dir / "search.json") << search.dump();
  auto sessions = LoadResults({dir.string()});
  ASSERT_TRUE(sessions.ok()) << sessions.status().message();
  EXPECT_EQ((*sessions)[0].id,
            summary["scenario"].get<std::string>() +
                " best at SLO (pd.decode.replicas=2 pd.decode.weights=int4, 0.11 sessions/s)");

  std::ofstream(dir / "search.json") << R"({"winner": null, "ranked": []})";
  auto bad = LoadResults({dir.string()});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("search.json: /winner: no configuration met the SLOs"),
            std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace capplan::report
