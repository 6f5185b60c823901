// The engine's per-step host costs and NCCL NVLS in a run: the shipped
// engine step costs reach the step price, a deployment can replace them,
// NVLS prices all-reduces faster and takes its buffers, and bad input is
// named at its JSON path.
#include <gtest/gtest.h>

#include <string>

#include "models/engine_step_costs.h"
#include "sim/scenario.h"
#include "sim/simulate.h"

namespace capplan::sim {
namespace {

nlohmann::json Doc(const std::string& engine, const std::string& version, int tp) {
  nlohmann::json d = nlohmann::json::parse(R"({
    "name": "t", "model": "llama-3.1-70b", "hardware": "h200-sxm",
    "deployment": {"gpus": 1, "tp": 1},
    "workload": {"kind": "closed_loop", "concurrency": 8, "num_requests": 32, "warmup_requests": 8,
                 "input_tokens": {"dist": "fixed", "value": 4000},
                 "output_tokens": {"dist": "fixed", "value": 200}, "seed": 1}})");
  d["deployment"]["engine"] = engine;
  d["deployment"]["engine_version"] = version;
  d["deployment"]["gpus"] = tp;
  d["deployment"]["tp"] = tp;
  return d;
}

Result<schema::RunSummary> RunDoc(const nlohmann::json& doc) {
  CAPPLAN_ASSIGN_OR_RETURN(auto sc, ParseScenario(doc, "t.json"));
  CAPPLAN_ASSIGN_OR_RETURN(RunResult r, RunScenario(*sc, RunOptions{}));
  return r.summary;
}

TEST(StepCosts, EachEngineVersionHasItsOwnEntry) {
  auto old_vllm = models::StepCostsFor("vllm", {0, 8, 5});
  auto new_vllm = models::StepCostsFor("vllm", {0, 19, 1});
  auto sglang = models::StepCostsFor("sglang", {0, 5, 6});
  ASSERT_TRUE(old_vllm.ok() && new_vllm.ok() && sglang.ok());
  EXPECT_EQ(old_vllm->version, "0.8.0");
  EXPECT_EQ(new_vllm->version, "0.19.0");
  EXPECT_EQ(sglang->version, "0.4.0");  // later releases inherit, and the source says so
  EXPECT_FALSE(new_vllm->sources.at("host_s").empty());
  EXPECT_FALSE(models::StepCostsFor("tgi", {1, 0, 0}).ok());
}

// A run says which engine release priced it when the scenario named none,
// and which entry's rules a release without one of its own took.
TEST(StepCosts, SummaryNamesTheEngineReleaseThatPricedIt) {
  nlohmann::json doc = Doc("vllm", "", 4);
  doc["deployment"].erase("engine_version");
  auto latest = RunDoc(doc);
  ASSERT_TRUE(latest.ok()) << latest.status().message();
  const std::string note = latest->pools.at(0).deployment.value("engine_version_note", "");
  EXPECT_NE(note.find("names no engine_version: vllm's newest entry (0.19.0)"), std::string::npos)
      << note;
  doc["deployment"]["engine_version"] = "0.10.1";
  auto between = RunDoc(doc);
  ASSERT_TRUE(between.ok()) << between.status().message();
  EXPECT_NE(between->pools.at(0).deployment.value("engine_version_note", "").find("0.8.0"),
            std::string::npos);
  doc["deployment"]["engine_version"] = "0.19.0";
  auto exact = RunDoc(doc);
  ASSERT_TRUE(exact.ok());
  EXPECT_FALSE(exact->pools.at(0).deployment.contains("engine_version_note"));
}

// A deployment's own step costs replace the engine's: 10 ms more per step
// shows in every inter-token gap.
TEST(StepCosts, DeploymentOverrideReachesEveryStep) {
  nlohmann::json doc = Doc("vllm", "0.19.0", 4);
  auto base = RunDoc(doc);
  doc["deployment"]["step_costs"] = {{"host_s", 0.010}};
  auto slow = RunDoc(doc);
  ASSERT_TRUE(base.ok()) << base.status().message();
  ASSERT_TRUE(slow.ok()) << slow.status().message();
  auto shipped = models::StepCostsFor("vllm", {0, 19, 0});
  ASSERT_TRUE(shipped.ok());
  const double added_ms = 1e3 * (0.010 - shipped->host_s);
  EXPECT_NEAR(*slow->tpot.median - *base->tpot.median, added_ms, 0.05 * added_ms);
}

TEST(StepCosts, BadStepCostsAreNamedAtTheirPath) {
  nlohmann::json doc = Doc("sglang", "", 4);
  doc["deployment"]["step_costs"] = {{"host_s", 5.0}};
  auto r = ParseScenario(doc, "t.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/deployment/step_costs/host_s"), std::string::npos)
      << r.status().message();
  doc["deployment"]["step_costs"] = {{"host_ms", 1.0}};
  r = ParseScenario(doc, "t.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("host_ms"), std::string::npos) << r.status().message();
}

// NVLS at TP8 (vLLM's default from 5 GPUs on): its buffers cost KV room,
// and its higher bus bandwidth makes prefill's large all-reduces faster.
TEST(StepCosts, NvlsTakesMemoryAndSpeedsLargeAllReduces) {
  nlohmann::json doc = Doc("vllm", "0.19.0", 8);
  doc["deployment"]["nccl_nvls"] = false;
  auto ring = RunDoc(doc);
  doc["deployment"]["nccl_nvls"] = true;
  auto nvls = RunDoc(doc);
  ASSERT_TRUE(ring.ok()) << ring.status().message();
  ASSERT_TRUE(nvls.ok()) << nvls.status().message();
  EXPECT_LT(*nvls->pools.at(0).kv_capacity_tokens, *ring->pools.at(0).kv_capacity_tokens);
  EXPECT_LT(*nvls->ttft.mean, *ring->ttft.mean);
  // The engine's default at TP8 is NVLS on.
  doc["deployment"].erase("nccl_nvls");
  auto dflt = RunDoc(doc);
  ASSERT_TRUE(dflt.ok());
  EXPECT_EQ(*dflt->pools.at(0).kv_capacity_tokens, *nvls->pools.at(0).kv_capacity_tokens);
}

}  // namespace
}  // namespace capplan::sim
