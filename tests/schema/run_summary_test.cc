#include "schema/run_summary.h"

#include <gtest/gtest.h>

#include <cmath>

namespace capplan::schema {
namespace {

// mean, median, p90, p95, p99 = base + 0 .. base + 4.
Stats Five(double base) { return Stats{base, base + 1, base + 2, base + 3, base + 4}; }

PoolSummary Pool(const std::string& name, PoolRole role) {
  PoolSummary p;
  p.name = name;
  p.role = role;
  p.deployment = {{"engine", "sglang"}, {"replicas", 2}};
  p.gpus = 16;
  p.kv_capacity_tokens = 1000;
  p.peak_kv_fraction = 0.5;
  p.kv_bound = false;
  p.memory = Memory{};
  p.memory->weights_bytes_per_gpu = 7;
  p.memory->weights_by_component_bytes = std::map<std::string, int64_t>{{"experts", 5}};
  p.memory->mem_fraction_static = 0.9;
  p.bound_time_share = std::map<std::string, double>{{"memory", 0.75}, {"compute", 0.25}};
  p.warnings = std::vector<std::string>{"w"};
  return p;
}

RunSummary Colocated() {
  RunSummary s;
  s.scenario = "sc";
  s.model = "m";
  s.profile = Profile{"h200-sxm", "calibrate/profiles/h200-sxm.json", {{"x", "datasheet"}}};
  s.workload = {{"kind", "closed_loop"}, {"concurrency", 4}};
  s.completed = 10;
  s.failed = 0;
  s.output_throughput = 100.0;
  s.gpus = 16;
  s.ttft = Five(10);
  s.tpot = Five(20);
  s.goodput = Goodput{{{"ttft_ms", 500.0}}, 9, 1.5, 0.9};
  s.notes["cost_tokens"] = "why";
  PoolSummary p = Pool("", PoolRole::kBoth);
  p.simulator = SimulatorStats{};
  p.simulator->step_cost_memo_hits = 3;
  s.pools.push_back(p);
  s.intervals["p90_ttft_ms"] = {10.0, 14.0};
  return s;
}

TEST(RunSummary, ColocatedIsFlatAndRoundTrips) {
  const nlohmann::json j = ToJson(Colocated());
  EXPECT_FALSE(j.contains("disaggregated"));
  EXPECT_FALSE(j.contains("pools"));
  EXPECT_EQ(j["deployment"]["replicas"], 2);
  EXPECT_EQ(j["kv_capacity_tokens"], 1000);
  EXPECT_TRUE(j["kv_capacity_tokens"].is_number_integer());
  EXPECT_TRUE(j["output_throughput"].is_number_float());
  EXPECT_EQ(j["p95_tpot_ms"], 23.0);
  EXPECT_EQ(j["p99_tpot_ms"], 24.0);
  EXPECT_EQ(j["p90_ttft_ms_lo"], 10.0);
  EXPECT_EQ(j["p90_ttft_ms_hi"], 14.0);
  EXPECT_EQ(j["cost_tokens_note"], "why");
  EXPECT_EQ(j["memory"]["weights_by_component_bytes"]["experts"], 5);
  EXPECT_EQ(j["simulator"]["step_cost_memo_hits"], 3);
  EXPECT_EQ(j["goodput"]["good_requests"], 9);
  auto back = FromJson(j, "t.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ToJson(*back), j);
  ASSERT_EQ(back->pools.size(), 1u);
  EXPECT_EQ(back->pools[0].role, PoolRole::kBoth);
  EXPECT_FALSE(back->disaggregated());
}

TEST(RunSummary, SeveralPoolsGoUnderPoolsWithTheirCosts) {
  RunSummary s = Colocated();
  s.pools.clear();
  s.profile.reset();
  PoolSummary pre = Pool("prefill", PoolRole::kPrefill);
  pre.cost_usd = 1.25;
  pre.stages["prefill_queue"] = Five(1);
  pre.notes["time_in_pool"] = "queue + prefill";
  pre.utilization = 0.4;
  PoolSummary dec = Pool("decode", PoolRole::kDecode);
  dec.cost_usd = 2.5;
  dec.completed = 10;
  s.pools = {pre, dec};
  s.transfer = Transfer{};
  s.transfer->link = "rdma";
  s.transfer->wire_bytes_per_token_per_rank = 70;
  s.transfer->exposed_transfer = Five(0.5);
  const nlohmann::json j = ToJson(s);
  EXPECT_EQ(j["disaggregated"], true);
  EXPECT_FALSE(j.contains("deployment"));
  EXPECT_EQ(j["cost_usd_prefill_pool"], 1.25);
  EXPECT_EQ(j["cost_usd_decode_pool"], 2.5);
  EXPECT_EQ(j["pools"]["prefill"]["median_prefill_queue_ms"], 2.0);
  EXPECT_EQ(j["pools"]["prefill"]["time_in_pool_note"], "queue + prefill");
  EXPECT_EQ(j["pools"]["decode"]["completed"], 10);
  EXPECT_EQ(j["pools"]["decode"]["gpus"], 16);
  EXPECT_EQ(j["transfer"]["p99_exposed_transfer_ms"], 4.5);
  auto back = FromJson(j, "pd.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ToJson(*back), j);
  ASSERT_NE(back->pool(PoolRole::kPrefill), nullptr);
  EXPECT_EQ(*back->pool(PoolRole::kPrefill)->cost_usd, 1.25);
  EXPECT_TRUE(back->disaggregated());
}

TEST(RunSummary, ReaderErrorsNameTheFileAndPath) {
  nlohmann::json j = ToJson(Colocated());
  j["output_throughput"] = "fast";
  auto r = FromJson(j, "bad.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bad.json: /output_throughput: must be a number"),
            std::string::npos)
      << r.status().message();
  j = ToJson(Colocated());
  j["bound_time_share"]["memory"] = 1.5;
  r = FromJson(j, "share.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/bound_time_share/memory"), std::string::npos)
      << r.status().message();
  j = ToJson(Colocated());
  j["p90_ttft_ms_lo"] = 20.0;
  EXPECT_FALSE(FromJson(j, "iv.json").ok());
  EXPECT_FALSE(FromJson(nlohmann::json::array(), "arr.json").ok());
}

TEST(RunSummary, ReaderAcceptsNamesAsObjectsAndProfilesAsNames) {
  nlohmann::json j = {{"model", {{"name", "kimi"}}}, {"profile", "h200"}, {"gpus", 8}};
  auto r = FromJson(j, "x.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r->model, "kimi");
  EXPECT_EQ(r->profile->name, "h200");
}

TEST(RunSummary, MetricByKeyIncludingIntervals) {
  const RunSummary s = Colocated();
  EXPECT_EQ(Metric(s, "p90_ttft_ms"), 12.0);
  EXPECT_EQ(Metric(s, "mean_tpot_ms"), 20.0);
  EXPECT_EQ(Metric(s, "p90_ttft_ms_hi"), 14.0);
  EXPECT_EQ(Metric(s, "gpus"), 16.0);
  EXPECT_FALSE(Metric(s, "p99_itl_ms").has_value());
  EXPECT_FALSE(Metric(s, "p99_tpot_ms_lo").has_value());
  EXPECT_FALSE(Metric(s, "no_such_metric").has_value());
  for (const std::string& k : MetricKeys()) EXPECT_EQ(k.find(' '), std::string::npos);
}

TEST(RunSummary, CostPerMillionTokensHasOneEdgeRule) {
  // $2/GPU-h x 8 GPUs for one hour, 16e6 tokens: $16 / 16 M tokens.
  EXPECT_DOUBLE_EQ(CostPerMillionTokens(2.0, 8, 3600, 16e6), 1.0);
  EXPECT_TRUE(std::isinf(CostPerMillionTokens(2.0, 8, 3600, 0)));
  EXPECT_TRUE(std::isinf(CostPerMillionTokens(2.0, 8, 0, 0)));
  // Rates work as well as totals: one second at 1000 tokens/s.
  EXPECT_NEAR(CostPerMillionTokens(2.0, 8, 1, 1000), 4.4444444, 1e-6);
}

}  // namespace
}  // namespace capplan::schema

namespace capplan::schema {
namespace {

// Energy keys: the run's at the top level (one key each, read back by
// Metric for SLOs and objectives), each pool's power under `pools`.
TEST(RunSummary, EnergyFieldsRoundTripAndAreMetrics) {
  RunSummary s;
  s.gpus = 16;
  s.output_throughput = 1000.0;
  s.pue = 1.5;
  s.nodes = 2;
  s.avg_kw = 6.38;
  s.peak_kw_per_node = 6.8;
  s.joules_per_output_token = 9.57;
  s.total_tokens_per_s_per_mw = 131578.9;
  s.electricity_usd_per_million_output_tokens = 0.2658;
  PoolSummary pre;
  pre.name = "prefill";
  pre.role = PoolRole::kPrefill;
  pre.gpus = 8;
  pre.nodes = 1;
  pre.avg_kw = 5.0;
  pre.peak_kw = 7.5;
  PoolSummary dec = pre;
  dec.name = "decode";
  dec.role = PoolRole::kDecode;
  s.pools = {pre, dec};
  const nlohmann::json j = ToJson(s);
  EXPECT_EQ(j["joules_per_output_token"], 9.57);
  EXPECT_EQ(j["peak_kw_per_node"], 6.8);
  EXPECT_EQ(j["pue"], 1.5);
  EXPECT_EQ(j["pools"]["decode"]["peak_kw"], 7.5);
  EXPECT_EQ(j["pools"]["prefill"]["nodes"], 1.0);
  auto back = FromJson(j, "e.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ToJson(*back), j);
  EXPECT_EQ(Metric(*back, "peak_kw_per_node"), 6.8);
  EXPECT_EQ(Metric(*back, "joules_per_output_token"), 9.57);
  EXPECT_EQ(Metric(*back, "electricity_usd_per_million_output_tokens"), 0.2658);
  EXPECT_FALSE(Metric(*back, "joules_per_total_token").has_value());
  // A co-located pool's power is the run's: not written twice.
  RunSummary flat = s;
  flat.pools = {PoolSummary{}};
  flat.pools[0].nodes = 2;
  flat.pools[0].avg_kw = 1.0;
  const nlohmann::json jf = ToJson(flat);
  EXPECT_EQ(jf["avg_kw"], 6.38);
  EXPECT_EQ(jf["nodes"], 2);
}

}  // namespace
}  // namespace capplan::schema
