// Runs the real `capplan` binary as a user (or a batch system) would: sharded
// sweeps as separate processes, merge, resume, bad flags, and a small search.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "common/json_util.h"
#include "tests/test_util/temp_dir.h"

namespace capplan::sim::sweep {
namespace {

namespace fs = std::filesystem;

const std::string kBin = CAPPLAN_BIN;
const std::string kData = std::string(CAPPLAN_SOURCE_DIR) + "/tests/sim/sweep/data";
const std::string kScenario = kData + "/small_open_loop.json";
const std::string kGrid =
    " --grid workload.request_rate=2,8,16 --grid deployment.kv_cache=bf16,fp8";

std::string Slurp(const std::string& path) {
  auto r = ReadFile(path);
  return r.ok() ? *r : std::string();
}

struct ProcRun {
  int code = -1;
  std::string out;
};

ProcRun Shell(const std::string& cmd, const std::string& log) {
  const int st = std::system(("bash -c '" + cmd + "' > " + log + " 2>&1").c_str());
  ProcRun r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = Slurp(log);
  return r;
}

std::string Fresh(const std::string& name) {
  const std::string p = test_util::TestTempPath(name);
  fs::create_directories(p);
  return p;
}

TEST(SweepCliTest, ShardProcessesThenMergeEqualSingleProcess) {
  const std::string tmp = Fresh("shards");
  const std::string one = tmp + "/one", many = tmp + "/many";
  ProcRun single = Shell(kBin + " sweep " + kScenario + kGrid + " --jobs 2 --out " + one,
                     tmp + "/single.log");
  ASSERT_EQ(single.code, 0) << single.out;
  EXPECT_NE(single.out.find("simulated 6"), std::string::npos) << single.out;

  // Three shards as concurrent processes: two by flags, one as a Slurm array
  // task would see it (index and count from the environment).
  const std::string shard = kBin + " sweep " + kScenario + kGrid + " --jobs 1 --out " + many;
  const std::string script =
      shard + " --shard-index 0 --shard-count 3 > " + tmp + "/s0.log 2>&1 & a=$!; " + shard +
      " --shard-index 1 --shard-count 3 > " + tmp + "/s1.log 2>&1 & b=$!; " +
      "SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_COUNT=3 " + shard + " > " + tmp +
      "/s2.log 2>&1 & c=$!; wait $a && wait $b && wait $c";
  ProcRun shards = Shell(script, tmp + "/shards.log");
  ASSERT_EQ(shards.code, 0) << Slurp(tmp + "/s0.log")
                            << Slurp(tmp + "/s2.log");
  EXPECT_NE(Slurp(tmp + "/s2.log").find("shard 2/3 (slurm) has 2"),
            std::string::npos)
      << Slurp(tmp + "/s2.log");
  EXPECT_FALSE(fs::exists(many + "/sweep.csv"));

  ProcRun merge = Shell(kBin + " sweep --merge " + many, tmp + "/merge.log");
  ASSERT_EQ(merge.code, 0) << merge.out;
  EXPECT_NE(merge.out.find("merged 6 points"), std::string::npos) << merge.out;
  const std::string a = Slurp(one + "/sweep.csv");
  const std::string b = Slurp(many + "/sweep.csv");
  EXPECT_EQ(std::count(a.begin(), a.end(), '\n'), 7);
  EXPECT_EQ(a, b);
  // Real simulations: more load, more output tokens per second.
  EXPECT_NE(a.find(",ok,"), std::string::npos) << a;

  // Resume: rerunning the finished sweep simulates nothing.
  ProcRun again = Shell(kBin + " sweep " + kScenario + kGrid + " --out " + one, tmp + "/again.log");
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_NE(again.out.find("simulated 0, skipped 6"), std::string::npos) << again.out;
}

TEST(SweepCliTest, MergeOfAnUnfinishedSweepListsMissingPoints) {
  const std::string tmp = Fresh("partial");
  ProcRun s0 = Shell(kBin + " sweep " + kScenario + kGrid + " --shard-index 0 --shard-count 2 --out " +
                     tmp + "/d",
                 tmp + "/s0.log");
  ASSERT_EQ(s0.code, 0) << s0.out;
  ProcRun merge = Shell(kBin + " sweep --merge " + tmp + "/d", tmp + "/merge.log");
  EXPECT_EQ(merge.code, 1) << merge.out;
  EXPECT_NE(merge.out.find("3 of 6 points have no result yet"), std::string::npos) << merge.out;
}

TEST(SweepCliTest, BadGridsAreUsageErrors) {
  const std::string tmp = Fresh("bad");
  ProcRun unknown = Shell(kBin + " sweep " + kScenario + " --grid deployment.tpp=4,8 --out " + tmp,
                      tmp + "/u.log");
  EXPECT_EQ(unknown.code, 2) << unknown.out;
  EXPECT_NE(unknown.out.find("--grid deployment.tpp=4"), std::string::npos) << unknown.out;
  EXPECT_NE(unknown.out.find("tp"), std::string::npos) << unknown.out;
  ProcRun type = Shell(kBin + " sweep " + kScenario + " --grid deployment.tp=four --out " + tmp,
                   tmp + "/t.log");
  EXPECT_EQ(type.code, 2) << type.out;
  EXPECT_NE(type.out.find("--grid deployment.tp=four"), std::string::npos) << type.out;
  EXPECT_NE(type.out.find("/deployment/tp"), std::string::npos) << type.out;
  ProcRun slo = Shell(kBin + " search " + kScenario + " --slo \"ttft_p97_ms<=100\" --space " + kData +
                      "/small_space.json --out " + tmp,
                  tmp + "/s.log");
  EXPECT_EQ(slo.code, 2) << slo.out;
  EXPECT_NE(slo.out.find("did you mean"), std::string::npos) << slo.out;
  EXPECT_FALSE(fs::exists(tmp + "/manifest.jsonl"));
}

TEST(SweepCliTest, SearchFindsAConfigurationAndExplainsPruning) {
  const std::string tmp = Fresh("search");
  ProcRun r = Shell(kBin + " search " + kScenario +
                    " --slo \"ttft_p90_ms<=1000\" --slo \"tpot_p90_ms<=60\" --objective "
                    "output_throughput_per_gpu --jobs 2 --space " +
                    kData + "/small_space.json --out " + tmp,
                tmp + "/search.log");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Binding constraint:"), std::string::npos) << r.out;
  auto j = ReadJsonFile(tmp + "/search.json");
  ASSERT_TRUE(j.ok()) << j.status().message();
  // Two replicas of TP4 need 8 GPUs > max_total_gpus 4: pruned before simulating.
  int budget = 0;
  for (const auto& p : (*j)["pruned_configs"]) budget += p["stage"] == "gpu_budget";
  EXPECT_EQ(budget, 2) << j->dump(1);
  ASSERT_FALSE((*j)["winner"].is_null()) << j->dump(1);
  EXPECT_LE((*j)["winner"]["p90_ttft_ms"].get<double>(), 1000);
  EXPECT_LE((*j)["winner"]["p90_tpot_ms"].get<double>(), 60);
}

TEST(SweepCliTest, ShippedPdRatioSearchRuns) {
  // The search space shipped in scenarios/search/ on its documented base.
  const std::string tmp = Fresh("pd_search");
  const std::string root = CAPPLAN_SOURCE_DIR;
  ProcRun r = Shell(kBin + " search " + root + "/scenarios/pd-glm-5.2.json --space " + root +
                        "/scenarios/search/pd-glm-5.2-ratio.json --slo \"p90_ttft_ms<=2000\" "
                        "--slo \"p90_tpot_ms<=50\" --jobs 2 --out " + tmp,
                    tmp + "/search.log");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("| P:D "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("binding pool: "), std::string::npos) << r.out;
  auto j = ReadJsonFile(tmp + "/search.json");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ((*j)["configs"], 12);
  // BF16 decode weights do not fit one 8xH200 pool: pruned before simulating.
  int bf16 = 0;
  for (const auto& p : (*j)["pruned_configs"]) {
    if (p["config"]["pd.decode.weights"] != "bf16") continue;
    ++bf16;
    EXPECT_EQ(p["stage"], "cheap_check");
    EXPECT_EQ(p["reason"].get<std::string>().rfind("decode pool: ", 0), 0u) << p.dump();
  }
  EXPECT_EQ(bf16, 4);
  ASSERT_FALSE((*j)["winner"].is_null()) << j->dump(1);
  const auto& w = (*j)["winner"];
  EXPECT_EQ(w["gpus"].get<int>(),
            w["pd"]["prefill_gpus"].get<int>() + w["pd"]["decode_gpus"].get<int>());
  EXPECT_LE(w["p90_ttft_ms"].get<double>(), 2000);
  EXPECT_LE(w["p90_tpot_ms"].get<double>(), 50);
}

TEST(SweepCliTest, ShippedHostKvSearchSizesTheTierAgainstAReplica) {
  // At the base's fixed 0.11 sessions/s, one 8xH200 replica needs a host
  // tier (none and 25 GiB per GPU fail p90 TTFT); two replicas pass without.
  const std::string tmp = Fresh("host_kv_search");
  const std::string root = CAPPLAN_SOURCE_DIR;
  ProcRun r = Shell(kBin + " search " + root +
                        "/scenarios/agentic/kimi-k2.6-hicache-session-rate.json --space " + root +
                        "/scenarios/search/kimi-k2.6-host-kv.json --slo \"p90_ttft_ms<=2000\" "
                        "--jobs 2 --out " + tmp,
                    tmp + "/search.log");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("| sessions/s |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Smallest kv_tiers meeting every SLO"), std::string::npos) << r.out;
  auto j = ReadJsonFile(tmp + "/search.json");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ((*j)["configs"], 10);
  EXPECT_EQ((*j)["rate_unit"], "sessions/s");
  const auto& rows = (*j)["smallest_passing"]["rows"];
  ASSERT_EQ(rows.size(), 2u) << j->dump(1);
  EXPECT_EQ(rows[0]["others"]["deployment.replicas"], 1);
  EXPECT_EQ(rows[0]["value"][0]["gib_per_gpu"], 50) << rows.dump(1);
  EXPECT_EQ(rows[1]["others"]["deployment.replicas"], 2);
  EXPECT_EQ(rows[1]["value"], nlohmann::json::array()) << rows.dump(1);
  // The host memory is priced, yet the tier costs less per token than 8 more GPUs.
  EXPECT_LT(rows[0]["configuration"]["cost_usd_per_million_output_tokens"].get<double>(),
            rows[1]["configuration"]["cost_usd_per_million_output_tokens"].get<double>());
}

}  // namespace
}  // namespace capplan::sim::sweep
