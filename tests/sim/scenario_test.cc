// Scenario parsing (bad input), whole runs on the real model library, the
// two properties, and golden summaries.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "common/json_util.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "sim/step_pricer.h"
#include "tests/test_util/expect_text.h"
#include "tests/test_util/temp_dir.h"

namespace capplan::sim {
namespace {

using test_util::ExpectContains;
using test_util::ExpectErrorContains;

nlohmann::json Base() {
  return nlohmann::json::parse(R"({
    "name": "t", "model": "llama-3.1-8b", "hardware": "h200-sxm",
    "deployment": {"engine": "sglang", "gpus": 1, "tp": 1, "kv_cache": "bf16", "page_size": 64},
    "workload": {"kind": "closed_loop", "concurrency": 4, "num_requests": 24, "warmup_requests": 4,
                 "client": "lock_step", "input_tokens": {"dist": "fixed", "value": 512},
                 "output_tokens": {"dist": "fixed", "value": 64}, "seed": 1}})");
}

Result<nlohmann::json> RunDoc(const nlohmann::json& doc) {
  CAPPLAN_ASSIGN_OR_RETURN(auto sc, ParseScenario(doc, "t.json"));
  CAPPLAN_ASSIGN_OR_RETURN(RunResult r, RunScenario(*sc, RunOptions{}));
  return schema::ToJson(r.summary);
}

TEST(SimScenario, UnknownKeySuggestsAndNamesThePath) {
  auto doc = Base();
  doc["deployment"]["tpp"] = 2;
  auto r = ParseScenario(doc, "t.json");
  ExpectErrorContains(r, StatusCode::kUsage, "t.json");
  ExpectContains(r.status().message(), "tpp");
  ExpectContains(r.status().message(), "'tp'");
  doc = Base();
  doc["workloadd"] = 1;
  EXPECT_EQ(ParseScenario(doc, "t.json").status().code(), StatusCode::kUsage);
}

TEST(SimScenario, WrongTypeAndBadEnumAreUsageErrors) {
  auto doc = Base();
  doc["deployment"]["tp"] = "1";
  auto r = ParseScenario(doc, "t.json");
  EXPECT_EQ(r.status().code(), StatusCode::kUsage);
  ExpectContains(r.status().message(), "/deployment/tp");
  doc = Base();
  doc["deployment"]["kv_cache"] = "fp9";
  r = ParseScenario(doc, "t.json");
  EXPECT_EQ(r.status().code(), StatusCode::kUsage);
  ExpectContains(r.status().message(), "fp8");
}

// The parser refuses a TP or EP degree the memory model would refuse, with
// the scenario's JSON path, so no degree passes one and fails the other.
TEST(SimScenario, ParallelDegreesShareTheModelsBound) {
  for (const char* key : {"tp", "ep"}) {
    auto doc = Base();
    doc["deployment"][key] = models::kMaxParallelDegree + 1;
    auto r = ParseScenario(doc, "t.json");
    EXPECT_EQ(r.status().code(), StatusCode::kUsage) << key;
    ExpectContains(r.status().message(), std::string("/deployment/") + key);
    ExpectContains(r.status().message(), "[1, " + std::to_string(models::kMaxParallelDegree) + "]");
  }
}

TEST(SimScenario, ImpossibleLayoutsAreInvalidConfig) {
  auto doc = Base();
  doc["deployment"]["gpus"] = 2;  // != tp
  EXPECT_EQ(ParseScenario(doc, "t.json").status().code(), StatusCode::kInvalidConfig);
  doc = Base();
  doc["deployment"]["gpus"] = 3;  // 32 heads, 8 KV heads: TP3 divides neither
  doc["deployment"]["tp"] = 3;
  auto r = RunDoc(doc);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidConfig) << r.status().message();
  ExpectContains(r.status().message(), "t.json: /deployment");
}

TEST(SimScenario, WeightsThatDoNotFitAreInvalidConfig) {
  auto doc = Base();
  doc["model"] = "kimi-k2.6";  // ~600 GB of weights on one GPU
  auto r = RunDoc(doc);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidConfig) << r.status().message();
}

TEST(SimScenario, UnknownModelSuggests) {
  auto doc = Base();
  doc["model"] = "llama-3.1-8";
  auto r = RunDoc(doc);
  ExpectErrorContains(r, "/model");
}

TEST(SimScenario, SetOverridesApplyBeforeParsing) {
  const std::string path = test_util::TestTempPath("sim_set.json");
  ASSERT_TRUE(WriteFileAtomic(path, Base().dump()).ok());
  auto sc = LoadScenarioFile(path, {"workload.concurrency=2", "deployment.kv_cache=fp8"});
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  EXPECT_EQ((*sc)->workload.concurrency, 2);
  EXPECT_EQ((*sc)->pools[0].deployment.kv_cache, models::Dtype::kFp8E4m3);
  EXPECT_EQ(LoadScenarioFile(path, {"novalue"}).status().code(), StatusCode::kUsage);
}

// `pd` is the two-pool case of the same parser: each pool is a deployment
// read at its own path, so errors name it and keep their code.
TEST(SimScenario, PdPoolsAreDeploymentsParsedAtTheirOwnPaths) {
  auto doc = Base();
  const nlohmann::json pool = doc["deployment"];
  doc.erase("deployment");
  doc["pd"] = {{"prefill", pool}, {"decode", pool}, {"transfer", {{"link", "nvlink"}}}};
  doc["pd"]["decode"]["kv_cache"] = "fp8";
  auto sc = ParseScenario(doc, "pd.json");
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  ASSERT_EQ((*sc)->pools.size(), 2u);
  EXPECT_EQ((*sc)->pools[0].role, schema::PoolRole::kPrefill);
  EXPECT_EQ((*sc)->pools[0].deployment.phase, Phase::kPrefillOnly);
  EXPECT_EQ((*sc)->pools[1].pointer, "/pd/decode");
  EXPECT_EQ((*sc)->pools[1].deployment.phase, Phase::kDecodeOnly);
  EXPECT_EQ((*sc)->pools[1].deployment.kv_cache, models::Dtype::kFp8E4m3);
  ASSERT_TRUE((*sc)->transfer.has_value());
  EXPECT_EQ((*sc)->transfer->link, "nvlink");

  auto bad = doc;
  bad["pd"]["decode"]["tp"] = 3;  // well-formed, impossible: InvalidConfig
  auto r = ParseScenario(bad, "pd.json");
  ExpectErrorContains(r, StatusCode::kInvalidConfig, "pd.json: /pd/decode/gpus");
  bad = doc;
  bad["pd"]["prefill"]["schedular"] = "vllm";  // malformed: Usage
  r = ParseScenario(bad, "pd.json");
  ExpectErrorContains(r, StatusCode::kUsage, "pd.json: /pd/prefill/schedular");
  bad = doc;
  bad["deployment"] = pool;
  EXPECT_EQ(ParseScenario(bad, "pd.json").status().code(), StatusCode::kUsage);
}

TEST(SimScenario, NamesAreResolvedAtParseTime) {
  auto doc = Base();
  doc["deployment"]["kv_cache"] = "fp8_e4m3";
  doc["deployment"]["kv_integrity"] = "verify";
  doc["deployment"]["phase"] = "decode_only";
  auto sc = ParseScenario(doc, "t.json");
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  const DeploymentSpec& d = (*sc)->pools[0].deployment;
  EXPECT_EQ(d.kv_cache, models::Dtype::kFp8E4m3);
  EXPECT_EQ(d.kv_integrity, KvIntegrity::kVerify);
  EXPECT_EQ(d.phase, Phase::kDecodeOnly);
  EXPECT_EQ(d.scheduler, "sglang");  // the engine's own, named at parse time
  doc["deployment"]["cost_model"] = "rooflin";
  auto r = ParseScenario(doc, "t.json");
  ExpectErrorContains(r, "/deployment/cost_model: unknown cost model 'rooflin'");
}

TEST(SimScenario, SummaryHasTheContractKeysAndConsistentNumbers) {
  auto doc = Base();
  doc["slo"] = {{"ttft_ms", 1e9}, {"tpot_ms", 1e9}};
  auto r = RunDoc(doc);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& s = *r;
  for (const char* k :
       {"scenario", "model", "hardware", "profile", "deployment", "completed", "failed",
        "duration_s", "request_throughput", "input_throughput", "output_throughput",
        "total_token_throughput", "output_throughput_per_gpu", "total_token_throughput_per_gpu",
        "mean_ttft_ms", "median_tpot_ms", "p90_itl_ms", "p99_e2el_ms", "goodput",
        "kv_capacity_tokens", "kv_bytes_per_token", "peak_kv_tokens", "max_concurrent_requests",
        "retractions", "kv_bound", "gpus", "usd_per_gpu_hour",
        "cost_usd_per_million_output_tokens", "cost_usd_per_million_total_tokens", "memory",
        "op_time_share", "bound_time_share", "iterations", "warnings"}) {
    EXPECT_TRUE(s.contains(k)) << k;
  }
  EXPECT_EQ(s["completed"], 20);
  EXPECT_EQ(s["max_concurrent_requests"], 4);
  EXPECT_EQ(s["goodput"]["good_requests"], 20);
  double share = 0;
  for (const auto& [k, v] : s["op_time_share"].items()) share += v.get<double>();
  EXPECT_NEAR(share, 1.0, 1e-9);
  const double dur = s["duration_s"];
  EXPECT_NEAR(s["output_throughput"].get<double>(), 20 * 64 / dur, 1e-6);
  // No cost block: h200-sxm's price block (1.41 USD per GPU-hour).
  EXPECT_EQ(s["usd_per_gpu_hour"].get<double>(), 1.41);
  EXPECT_NEAR(s["cost_usd_per_million_output_tokens"].get<double>(),
              1.41 * 1 * dur / 3600 / (20 * 64) * 1e6, 1e-9);
  // TPOT median lies within the ITL range it averages.
  EXPECT_GT(s["median_tpot_ms"].get<double>(), 0);
}

TEST(SimScenario, ACostBlockOverridesTheProfilesPrice) {
  auto doc = Base();
  doc["cost"] = {{"usd_per_gpu_hour", 3.0}};
  auto r = RunDoc(doc);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double dur = (*r)["duration_s"];
  EXPECT_EQ((*r)["usd_per_gpu_hour"].get<double>(), 3.0);
  EXPECT_NEAR((*r)["cost_usd_per_million_output_tokens"].get<double>(),
              3.0 * dur / 3600 / (20 * 64) * 1e6, 1e-9);
}

TEST(SimScenario, AProfileWithoutAPriceNeedsACostBlock) {
  auto doc = Base();
  doc["hardware"] = "b300-sxm";  // no public per-GPU-hour figure, no price block
  auto r = RunDoc(doc);
  ASSERT_FALSE(r.ok());
  ExpectContains(r.status().message(),
                 "/cost/usd_per_gpu_hour: hardware profile b300-sxm gives "
                 "no GPU price");
  doc["cost"] = {{"usd_per_gpu_hour", 2.5}};
  auto ok = RunDoc(doc);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ((*ok)["usd_per_gpu_hour"].get<double>(), 2.5);
}

// Properties on a KV-bound Kimi K2.6 decode pool (BF16 KV, 64 x 17K tokens
// do not fit): more KV capacity never lowers throughput; FP8 KV holds more.
nlohmann::json Kimi(const std::string& kv, int conc) {
  auto doc = Base();
  doc["model"] = "kimi-k2.6";
  doc["deployment"] = {{"gpus", 8}, {"tp", 8}, {"kv_cache", kv}, {"phase", "decode_only"}};
  doc["workload"]["concurrency"] = conc;
  doc["workload"]["num_requests"] = 3 * conc;
  doc["workload"]["warmup_requests"] = 0;
  doc["workload"]["input_tokens"]["value"] = 16384;
  doc["workload"]["output_tokens"]["value"] = 128;
  return doc;
}

TEST(SimProperties, MoreKvNeverLowersThroughputInAKvBoundRun) {
  double prev = 0;
  bool some_bound = false;
  for (double mfs : {0.86, 0.88, 0.90, 0.92}) {
    auto doc = Kimi("bf16", 96);
    doc["deployment"]["mem_fraction_static"] = mfs;
    auto r = RunDoc(doc);
    ASSERT_TRUE(r.ok()) << r.status().message();
    some_bound = some_bound || (*r)["kv_bound"].get<bool>();
    const double t = (*r)["output_throughput"];
    EXPECT_GE(t, prev * 0.999) << "mem_fraction_static " << mfs;
    prev = t;
  }
  EXPECT_TRUE(some_bound);
}

TEST(SimProperties, ThroughputRisesWithConcurrencyUntilABound) {
  double prev = 0;
  for (int c : {1, 4, 16}) {
    auto r = RunDoc(Kimi("fp8", c));
    ASSERT_TRUE(r.ok()) << r.status().message();
    const double t = (*r)["output_throughput"];
    EXPECT_GT(t, prev * 1.5) << "concurrency " << c;
    prev = t;
  }
}

TEST(SimProperties, Fp8KvHoldsMoreAndVerifyCostsTime) {
  auto bf = RunDoc(Kimi("bf16", 4));
  auto f8 = RunDoc(Kimi("fp8", 4));
  ASSERT_TRUE(bf.ok() && f8.ok());
  EXPECT_GT((*f8)["kv_capacity_tokens"].get<int64_t>(),
            (*bf)["kv_capacity_tokens"].get<int64_t>() * 3 / 2);
  auto v = Kimi("fp8", 4);
  v["deployment"]["kv_integrity"] = "verify";
  auto ver = RunDoc(v);
  ASSERT_TRUE(ver.ok());
  EXPECT_GT((*ver)["kv_verify_time_share"].get<double>(), 0);
  EXPECT_EQ((*f8)["kv_verify_time_share"].get<double>(), 0);
  EXPECT_GT((*ver)["median_tpot_ms"].get<double>(), (*f8)["median_tpot_ms"].get<double>());
}

// Runs that share step prices (a search's probes) report exactly what they
// report alone: prices, memo counts and out-of-range warnings included.
TEST(SimScenario, SharedStepPricesChangeNothing) {
  auto run = [](double rate, StepPriceCache* cache) -> Result<std::string> {
    auto doc = ReadJsonFile(DataPath("scenarios/pd-kimi-k2.6-colocated.json"));
    if (!doc.ok()) return doc.status();
    (*doc)["workload"]["request_rate"] = rate;
    (*doc)["workload"]["num_requests"] = 40;
    (*doc)["workload"]["warmup_requests"] = 0;
    CAPPLAN_ASSIGN_OR_RETURN(auto sc, ParseScenario(*doc, "t.json"));
    RunOptions o;
    o.price_cache = cache;
    CAPPLAN_ASSIGN_OR_RETURN(RunResult r, RunScenario(*sc, o));
    return DumpJson(schema::ToJson(r.summary));
  };
  StepPriceCache cache;
  auto warm = run(0.5, &cache);  // fills the cache
  ASSERT_TRUE(warm.ok()) << warm.status().message();
  EXPECT_EQ(cache.tables(), 1u);
  auto shared = run(2.0, &cache);
  auto alone = run(2.0, nullptr);
  ASSERT_TRUE(shared.ok() && alone.ok());
  EXPECT_EQ(*shared, *alone);
  EXPECT_NE(alone->find("outside the profile's valid range"), std::string::npos);
  EXPECT_EQ(cache.tables(), 1u);  // the workload is not part of the pool's fingerprint
}

TEST(SimScenario, DeterministicForASeed) {
  auto a = RunDoc(Base());
  auto b = RunDoc(Base());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(DumpJson(*a), DumpJson(*b));
}

// Golden whole-run summaries with fixed seeds. Regenerate deliberately:
//   CAPPLAN_UPDATE_GOLDEN=1 build-DIR/tests/sim/sim_scenario_test --gtest_filter='*Golden*'
void CheckGolden(const std::string& name, const nlohmann::json& doc) {
  auto r = RunDoc(doc);
  ASSERT_TRUE(r.ok()) << r.status().message();
  nlohmann::json got;
  for (const char* k : {"completed", "duration_s", "output_throughput", "mean_ttft_ms",
                        "median_tpot_ms", "p99_itl_ms", "p99_e2el_ms", "kv_capacity_tokens",
                        "peak_kv_tokens", "retractions", "kv_bound", "iterations"}) {
    got[k] = (*r)[k];
  }
  const std::string path = DataPath("tests/sim/golden/" + name + ".json");
  if (std::getenv("CAPPLAN_UPDATE_GOLDEN") != nullptr) {
    ASSERT_TRUE(WriteFileAtomic(path, DumpJson(got) + "\n").ok());
    GTEST_SKIP() << "golden rewritten: " << path;
  }
  auto want = ReadJsonFile(path);
  ASSERT_TRUE(want.ok()) << want.status().message();
  for (const auto& [k, v] : want->items()) {
    if (v.is_number_float()) {
      EXPECT_NEAR(got[k].get<double>(), v.get<double>(), 1e-9 * std::max(1.0, std::abs(v.get<double>())))
          << name << " " << k;
    } else {
      EXPECT_EQ(got[k], v) << name << " " << k;
    }
  }
}

TEST(SimGolden, Llama8bClosedLoop) { CheckGolden("llama8b_closed_loop", Base()); }

TEST(SimGolden, Llama8bOpenLoopVllm) {
  auto doc = Base();
  doc["deployment"]["engine"] = "vllm";
  doc["deployment"]["page_size"] = 16;
  doc["workload"] = nlohmann::json::parse(R"({"kind": "open_loop", "request_rate": 20,
      "num_requests": 40, "warmup_requests": 0, "seed": 7,
      "input_tokens": {"dist": "lognormal", "median": 300, "p90": 900, "max": 2048},
      "output_tokens": {"dist": "lognormal", "median": 100, "p90": 300, "max": 1024}})");
  CheckGolden("llama8b_open_loop_vllm", doc);
}

TEST(SimGolden, KimiKvBoundBf16) {
  auto doc = Kimi("bf16", 96);
  doc["deployment"]["mem_fraction_static"] = 0.86;
  CheckGolden("kimi_kv_bound", doc);
}

// A scenario's `hardware` takes any shipped profile: on h100-sxm (81,559
// MiB, 2.90 TB/s copy) the same decode-heavy run is slower per token than on
// h200-sxm (4.3 TB/s) and the plan uses the H100's memory.
// vLLM's rule (gpu_memory_utilization) holds for any GPU size; SGLang's
// mem_fraction_static buckets are per GPU memory (models/engine_rules.json).
TEST(SimScenario, H100ProfileByName) {
  auto doc = Base();
  doc["deployment"]["engine"] = "vllm";
  doc["deployment"]["page_size"] = 16;
  auto h200 = RunDoc(doc);
  ASSERT_TRUE(h200.ok()) << h200.status().message();
  doc["hardware"] = "h100-sxm";
  auto h100 = RunDoc(doc);
  ASSERT_TRUE(h100.ok()) << h100.status().message();
  EXPECT_EQ((*h100)["hardware"], "h100-sxm");
  EXPECT_EQ((*h100)["profile"]["name"], "h100-sxm");
  EXPECT_EQ((*h100)["memory"]["gpu_memory_bytes"].get<int64_t>(), 81559LL * 1024 * 1024);
  EXPECT_GT((*h100)["mean_tpot_ms"].get<double>(), (*h200)["mean_tpot_ms"].get<double>());
  doc["hardware"] = "h100-sx";
  auto bad = RunDoc(doc);
  ExpectErrorContains(bad, "did you mean 'h100-sxm'");
}

}  // namespace
}  // namespace capplan::sim
