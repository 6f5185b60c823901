// The energy keys of a scenario (cost.usd_per_kwh, cost.pue, capex,
// deployment.power_limit_w) and what a run reports with them.
#include <gtest/gtest.h>

#include "sim/energy.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "tests/test_util/expect_text.h"

namespace capplan::sim {
namespace {

using test_util::ExpectContains;

nlohmann::json Base() {
  return nlohmann::json::parse(R"({
    "name": "t", "model": "llama-3.1-8b", "hardware": "h200-sxm",
    "deployment": {"engine": "sglang", "gpus": 1, "tp": 1, "kv_cache": "bf16", "page_size": 64},
    "workload": {"kind": "closed_loop", "concurrency": 8, "num_requests": 48, "warmup_requests": 8,
                 "client": "lock_step", "input_tokens": {"dist": "fixed", "value": 2048},
                 "output_tokens": {"dist": "fixed", "value": 64}, "seed": 1}})");
}

Result<schema::RunSummary> RunDoc(const nlohmann::json& doc) {
  CAPPLAN_ASSIGN_OR_RETURN(auto sc, ParseScenario(doc, "t.json"));
  CAPPLAN_ASSIGN_OR_RETURN(RunResult r, RunScenario(*sc, RunOptions{}));
  return r.summary;
}

TEST(EnergyScenario, CostBlockTakesPuePriceOrCapex) {
  auto doc = Base();
  doc["cost"] = {{"usd_per_kwh", 0.08}, {"pue", 1.2},
                 {"capex_usd_per_gpu", 35000}, {"amortization_years", 5}};
  auto sc = ParseScenario(doc, "t.json");
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  EXPECT_EQ((*sc)->energy.pue, 1.2);
  EXPECT_EQ(*(*sc)->energy.usd_per_kwh, 0.08);
  EXPECT_NEAR(*(*sc)->usd_per_gpu_hour, 35000.0 / (5 * 8760), 1e-12);
  auto plain = ParseScenario(Base(), "t.json");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->energy.pue, kDefaultPue);
  EXPECT_FALSE((*plain)->energy.usd_per_kwh.has_value());
}

TEST(EnergyScenario, BadCostAndLimitKeysAreNamed) {
  auto doc = Base();
  doc["cost"] = {{"capex_usd_per_gpu", 35000}};
  auto r = ParseScenario(doc, "t.json");
  ASSERT_FALSE(r.ok());
  ExpectContains(r.status().message(), "amortization_years");
  doc["cost"] = {{"capex_usd_per_gpu", 35000}, {"amortization_years", 5}, {"usd_per_gpu_hour", 2}};
  r = ParseScenario(doc, "t.json");
  ASSERT_FALSE(r.ok());
  ExpectContains(r.status().message(), "either usd_per_gpu_hour");
  doc["cost"] = {{"pue", 0.9}};
  r = ParseScenario(doc, "t.json");
  ASSERT_FALSE(r.ok());
  ExpectContains(r.status().message(), "/cost/pue");
  doc = Base();
  doc["deployment"]["power_limit_w"] = 900;
  auto run = RunDoc(doc);
  ASSERT_FALSE(run.ok());
  ExpectContains(run.status().message(), "power_limit_w");
  ExpectContains(run.status().message(), "700 W");
}

TEST(EnergyScenario, RunReportsEnergyAndALimitTradesTimeForPower) {
  auto doc = Base();
  doc["cost"] = {{"usd_per_kwh", 0.1}};
  auto free = RunDoc(doc);
  ASSERT_TRUE(free.ok()) << free.status().message();
  ASSERT_TRUE(free->joules_per_output_token.has_value());
  EXPECT_GT(*free->gpu_joules_per_output_token, 0);
  EXPECT_LT(*free->gpu_joules_per_output_token, *free->joules_per_output_token);
  EXPECT_DOUBLE_EQ(*free->nodes, 0.125);
  EXPECT_EQ(*free->pue, kDefaultPue);
  // One H200 of an 8-GPU node: board at 700 W plus an eighth of the
  // node's non-GPU power, times the PUE.
  EXPECT_NEAR(*free->provisioned_kw, (0.7 + 3.0 / 8) * kDefaultPue, 1e-9);
  EXPECT_GT(*free->electricity_usd_per_million_output_tokens, 0);
  doc["deployment"]["power_limit_w"] = 450;
  auto capped = RunDoc(doc);
  ASSERT_TRUE(capped.ok()) << capped.status().message();
  // Prefill (compute-bound, at the 700 W board limit) slows.
  EXPECT_GT(*capped->ttft.mean, *free->ttft.mean);
  EXPECT_NEAR(*capped->provisioned_kw, (0.45 + 3.0 / 8) * kDefaultPue, 1e-9);
  EXPECT_LT(*capped->peak_kw, *free->peak_kw);
  EXPECT_EQ(schema::ToJson(*capped)["deployment"]["power_limit_w"], 450.0);
}

}  // namespace
}  // namespace capplan::sim
