// Search over a PD scenario with the real hooks (ParseScenario / RunScenario and
// the models/ memory plan of both pools) on a small GLM-5.2 workload: the
// prefill:decode ratio varies, BF16 decode weights are pruned on paper with
// the pool named, GPUs count both pools, and the ranking is deterministic.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "common/json_util.h"
#include "sim/sweep/pd_shape.h"
#include "sim/sweep/search.h"
#include "sim/sweep/search_report.h"
#include "sim/sweep/sim_hooks.h"

namespace capplan::sim::sweep {
namespace {

const std::string kScenario =
    std::string(CAPPLAN_SOURCE_DIR) + "/tests/sim/sweep/data/small_pd.json";

// 2 x 2 x 2 = 8 configurations: BF16 decode weights (4) do not fit one
// 8xH200 pool; 2P:2D uses 32 GPUs > 24.
constexpr char kSpace[] = R"({
  "axes": {"pd.prefill.replicas": [1, 2], "pd.decode.replicas": [1, 2],
           "pd.decode.weights": ["bf16", "int4"]},
  "request_rate": {"min_req_per_s": 0.5, "max_req_per_s": 64, "rel_tol": 0.1},
  "max_total_gpus": 24,
  "top_n": 4
})";

Result<SearchResult> PdSearch() {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json base, LoadBaseScenario(kScenario, {}));
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json space_doc, ParseJson(kSpace, "space.json"));
  CAPPLAN_ASSIGN_OR_RETURN(SearchSpace space, ParseSearchSpace(space_doc, "space.json"));
  SearchOptions o;
  for (const char* text : {"p90_ttft_ms<=300", "p90_tpot_ms<=25"}) {
    CAPPLAN_ASSIGN_OR_RETURN(Slo slo, ParseSlo(text));
    o.slos.push_back(slo);
  }
  o.jobs = 2;
  return RunSearch(base, kScenario, space, o, RealSimHooks(kScenario));
}

std::string Get(const GridAssignment& grid, const std::string& path) {
  for (const auto& [p, v] : grid) {
    if (p == path) return v.is_string() ? v.get<std::string>() : v.dump();
  }
  return "";
}

TEST(PdSearchTest, VariesTheRatioPrunesPerPoolAndCountsBothPools) {
  auto r = PdSearch();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->configs, 8);
  std::map<std::string, int> stages;
  for (const auto& p : r->pruned) {
    ++stages[p.stage];
    if (Get(p.grid, "pd.decode.weights") == "bf16") {
      EXPECT_EQ(p.stage, "cheap_check") << p.reason;
      EXPECT_EQ(p.reason.rfind("decode pool: ", 0), 0u) << p.reason;
      EXPECT_NE(p.reason.find("weights need"), std::string::npos) << p.reason;
    } else {
      EXPECT_EQ(Get(p.grid, "pd.prefill.replicas"), "2");
      EXPECT_EQ(Get(p.grid, "pd.decode.replicas"), "2");
      EXPECT_EQ(p.stage, "gpu_budget");
      EXPECT_EQ(p.reason, "uses 32 GPUs, more than max_total_gpus=24");
    }
  }
  EXPECT_EQ(stages["cheap_check"], 4);
  EXPECT_EQ(stages["gpu_budget"], 1);
  ASSERT_EQ(r->ranked.size(), 3u);
  std::map<std::string, int> ratios;
  for (const FeasibleConfig& f : r->ranked) {
    const auto pd = PdShapeOf(f.summary, f.binding);
    ASSERT_TRUE(pd.has_value());
    ++ratios[pd->ratio];
    EXPECT_EQ(pd->ratio,
              Get(f.grid, "pd.prefill.replicas") + "P:" + Get(f.grid, "pd.decode.replicas") + "D");
    EXPECT_EQ(pd->prefill.gpus, 8 * pd->prefill.replicas);
    EXPECT_EQ(pd->decode.gpus, 8 * pd->decode.replicas);
    EXPECT_EQ(*f.summary.gpus, pd->prefill.gpus + pd->decode.gpus);
    EXPECT_TRUE(pd->binding_pool == "prefill" || pd->binding_pool == "decode");
    // The SLOs, not the rate range, stop every configuration; a TPOT bound
    // is the decode pool's.
    EXPECT_GT(f.rate, 0.5);
    ASSERT_EQ(f.binding["kind"], "slo") << f.binding.dump();
    if (f.binding["slos"][0]["metric"] == "p90_tpot_ms") {
      EXPECT_EQ(pd->binding_pool, "decode");
    }
  }
  EXPECT_EQ(ratios, (std::map<std::string, int>{{"1P:1D", 1}, {"1P:2D", 1}, {"2P:1D", 1}}));

  const nlohmann::json j = SearchJson(*r);
  EXPECT_EQ(j["winner"]["pd"]["ratio"].get<std::string>().size(), 5u);
  EXPECT_TRUE(j["pareto"][0].contains("pd")) << j["pareto"].dump();
  std::ostringstream os;
  PrintSearchReport(*r, os);
  EXPECT_NE(os.str().find("| P:D   | prefill_gpus | decode_gpus | binding pool"), std::string::npos)
      << os.str();
  // Axes sort by path; ambiguous last segments keep the pool's name.
  EXPECT_NE(os.str().find("decode.replicas=1 weights=int4 prefill.replicas=1"), std::string::npos)
      << os.str();
  EXPECT_NE(os.str().find("binding pool: "), std::string::npos) << os.str();
}

TEST(PdSearchTest, RankingIsDeterministic) {
  auto a = PdSearch();
  auto b = PdSearch();
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->ranked.size(), b->ranked.size());
  for (size_t i = 0; i < a->ranked.size(); ++i) {
    EXPECT_EQ(a->ranked[i].point_id, b->ranked[i].point_id);
    EXPECT_EQ(a->ranked[i].rate, b->ranked[i].rate);
    EXPECT_EQ(schema::ToJson(a->ranked[i].summary).dump(),
              schema::ToJson(b->ranked[i].summary).dump());
  }
}

TEST(PdSearchTest, PdPointsValidateThroughThePdParser) {
  auto base = LoadBaseScenario(kScenario, {"pd.decode.tp=8"});
  ASSERT_TRUE(base.ok()) << base.status().message();
  const SimHooks hooks = RealSimHooks(kScenario);
  nlohmann::json doc = *base;
  doc["pd"]["decode"]["weigths"] = "int4";
  const Status st = hooks.validate(doc);
  EXPECT_EQ(st.code(), StatusCode::kUsage);
  EXPECT_NE(st.message().find("/pd/decode/weigths"), std::string::npos) << st.message();
  auto bad_set = LoadBaseScenario(kScenario, {"pd.decode.replica=2"});
  ASSERT_FALSE(bad_set.ok());
}

}  // namespace
}  // namespace capplan::sim::sweep

namespace capplan::sim::sweep {
namespace {

schema::RunSummary Summary(const nlohmann::json& j) {
  return schema::FromJson(j, "summary.json").value();
}

// Hand-made PD summary: prefill waits 50 ms on average, decode 5 + 1 ms.
nlohmann::json PdSummary() {
  return nlohmann::json::parse(R"({
    "disaggregated": true, "gpus": 24,
    "pools": {
      "prefill": {"deployment": {"gpus": 8, "replicas": 2}, "gpus": 16, "utilization": 0.3,
                  "mean_prefill_queue_ms": 50},
      "decode": {"deployment": {"gpus": 8, "replicas": 1}, "gpus": 8, "utilization": 0.9,
                 "mean_decode_queue_ms": 5, "mean_reservation_wait_ms": 1}}})");
}

TEST(PdShapeTest, BindingPoolFollowsTheBindingSloThenQueuesThenUtilization) {
  EXPECT_FALSE(PdShapeOf(Summary({{"gpus", 8}})).has_value());
  const nlohmann::json ttft = {{"kind", "slo"}, {"slos", {{{"metric", "p90_ttft_ms"}}}}};
  const nlohmann::json tpot = {{"kind", "slo"}, {"slos", {{{"metric", "p90_tpot_ms"}}}}};
  auto by_queue = PdShapeOf(Summary(PdSummary()), ttft);
  ASSERT_TRUE(by_queue.has_value());
  EXPECT_EQ(by_queue->ratio, "2P:1D");
  EXPECT_EQ(by_queue->prefill.gpus, 16);
  EXPECT_EQ(by_queue->decode.gpus, 8);
  EXPECT_DOUBLE_EQ(*by_queue->decode.mean_queue_ms, 6);
  EXPECT_EQ(by_queue->binding_pool, "prefill");
  EXPECT_EQ(by_queue->binding_text,
            "prefill (mean queue prefill 50 ms vs decode 6 ms; utilization prefill 30%, "
            "decode 90%)");
  EXPECT_EQ(PdShapeOf(Summary(PdSummary()), tpot)->binding_pool, "decode");
  nlohmann::json no_queues = PdSummary();
  no_queues["pools"]["prefill"].erase("mean_prefill_queue_ms");
  EXPECT_EQ(PdShapeOf(Summary(no_queues), ttft)->binding_pool, "decode");  // busier
  EXPECT_EQ(PdShapeJson(*by_queue)["prefill_gpus"], 16);
}

}  // namespace
}  // namespace capplan::sim::sweep
