#include "report/analysis.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/report/report_test_data.h"

namespace capplan::report {
namespace {

using test_data::kData;
using test_data::KimiFiles;
using test_data::Loaded;

std::vector<Summary> Kimi() { return Loaded(KimiFiles()); }

const Point& PointOf(const Analysis& a, const std::string& id, double concurrency) {
  for (const auto& p : a.points) {
    if (p.summary->id == id && p.summary->concurrency == concurrency) return p;
  }
  ADD_FAILURE() << "no point " << id << " @" << concurrency;
  return a.points.front();
}

TEST(ReportAnalysis, CostPerMillionFollowsTheFormula) {
  // $2/GPU-h x 8 GPUs = $16/h = $0.004444/s; at 1000 tok/s that is $4.444/M.
  EXPECT_NEAR(schema::CostPerMillionTokens(2.0, 8, 1.0, 1000), 4.4444444, 1e-6);
  EXPECT_TRUE(std::isinf(schema::CostPerMillionTokens(2.0, 8, 1.0, 0)));
}

TEST(ReportAnalysis, GroupsByConfigurationAndSortsByConcurrency) {
  auto a = Analyze(Kimi(), {});
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_EQ(a->configs.size(), 2u);
  EXPECT_EQ(a->configs[0].label, "bf16 KV");
  EXPECT_EQ(a->configs[1].label, "fp8 KV");
  EXPECT_EQ(a->baseline_configs, std::vector<int>{0});
  ASSERT_EQ(a->configs[1].points.size(), 2u);
  EXPECT_EQ(*a->results[a->configs[1].points[0]].concurrency, 16);
}

TEST(ReportAnalysis, CostChangeIsAgainstBaselineAtSameConcurrency) {
  auto a = Analyze(Kimi(), {});
  ASSERT_TRUE(a.ok());
  const Point& fp8_64 = PointOf(*a, "fp8 KV", 64);
  ASSERT_TRUE(fp8_64.output_cost_change.has_value());
  // Same price and GPUs: the cost ratio is the inverse throughput ratio.
  EXPECT_NEAR(*fp8_64.output_cost_change, 2000.0 / 3200.0 - 1, 1e-9);
  EXPECT_NEAR(*fp8_64.total_cost_change, 10000.0 / 16000.0 - 1, 1e-9);
  EXPECT_EQ(a->results[fp8_64.baseline_point].concurrency, 64);
  const Point& fp8_16 = PointOf(*a, "fp8 KV", 16);
  EXPECT_NEAR(*fp8_16.output_cost_change, 1000.0 / 1100.0 - 1, 1e-9);
  EXPECT_FALSE(PointOf(*a, "bf16 KV", 16).output_cost_change.has_value());
  EXPECT_EQ(ChangePhrase(-0.31, "cost per output token", "bf16 KV"),
            "\u221231% cost per output token vs bf16 KV");
}

TEST(ReportAnalysis, BaselineFlagAndPriceOverride) {
  ReportOptions o;
  o.baselines = {"fp8 KV"};
  o.usd_per_gpu_hour = 3.5;
  auto a = Analyze(Kimi(), o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->baseline_configs, std::vector<int>{1});
  const Point& bf16_64 = PointOf(*a, "bf16 KV", 64);
  EXPECT_NEAR(*bf16_64.output_cost_change, 3200.0 / 2000.0 - 1, 1e-9);
  EXPECT_NEAR(bf16_64.cost->usd_per_million_output, 3.5 * 8 / 3600 / 2000 * 1e6, 1e-9);
}

TEST(ReportAnalysis, UnknownBaselineSuggestsTheClosestLabel) {
  ReportOptions o;
  o.baselines = {"fp8-kv"};
  auto a = Analyze(Kimi(), o);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().ExitCode(), 2);
  EXPECT_NE(a.status().message().find("did you mean 'fp8 KV'"), std::string::npos)
      << a.status().message();
}

TEST(ReportAnalysis, WhatBinds) {
  auto a = Analyze(Kimi(), {});
  ASSERT_TRUE(a.ok());
  // 630000 of 640368 KV tokens in use: the pool binds.
  const Binding& kv = PointOf(*a, "bf16 KV", 64).binding;
  EXPECT_EQ(kv.binds, "KV capacity");
  EXPECT_NE(kv.headroom.find("KV 98% full"), std::string::npos) << kv.headroom;
  // Low load: HBM bandwidth dominates step time; next limit is the KV pool.
  const Binding& bw = PointOf(*a, "bf16 KV", 16).binding;
  EXPECT_EQ(bw.binds, "HBM bandwidth");
  EXPECT_NE(bw.headroom.find("HBM-bound 70% of step time"), std::string::npos) << bw.headroom;
  EXPECT_NE(bw.next_limit.find("KV capacity (KV 31% full; 69% headroom)"), std::string::npos)
      << bw.next_limit;
  // p99 TPOT 32 ms against a 30 ms SLO.
  const Binding& slo = PointOf(*a, "fp8 KV", 64).binding;
  EXPECT_EQ(slo.binds, "SLO");
  EXPECT_NE(slo.headroom.find("p99 TPOT 32 ms = 107% of 30 ms SLO"), std::string::npos)
      << slo.headroom;
}

// A search's SLO on p90 TTFT is judged at the p90, not the p99: the table
// agrees with the headline that named it.
TEST(ReportAnalysis, SloJudgedAtTheStatisticItBounds) {
  Summary s;
  s.bound_time_share = {{"memory", 1.0}};
  s.slo_ms["ttft_ms"] = 2000;
  s.slo_stat["ttft"] = "p90";
  s.latency_ms["p90_ttft"] = 1500;
  s.latency_ms["p99_ttft"] = 2260;
  const Binding b = AnalyzeBinding(s);
  EXPECT_NE(b.headroom.find("p90 TTFT 1500 ms = 75% of 2000 ms SLO"), std::string::npos)
      << b.headroom;
  EXPECT_EQ(b.headroom.find("p99"), std::string::npos) << b.headroom;
  s.slo_stat.clear();  // a goodput SLO bounds every request: its p99
  EXPECT_NE(AnalyzeBinding(s).headroom.find("p99 TTFT"), std::string::npos);
}

TEST(ReportAnalysis, BindingWithoutSharesSaysUnknown) {
  Summary s;
  EXPECT_EQ(AnalyzeBinding(s).binds.rfind("unknown", 0), 0u);
  s.bound_time_share = {{"compute", 0.8}, {"memory", 0.2}};
  EXPECT_EQ(AnalyzeBinding(s).binds, "compute");
  EXPECT_EQ(AnalyzeBinding(s).next_limit, "HBM bandwidth (HBM-bound 20% of step time)");
}

TEST(ReportAnalysis, ParetoFrontKeepsOnlyUndominatedPoints) {
  auto a = Analyze(Kimi(), {});
  ASSERT_TRUE(a.ok());
  // tokens/s/user = 1000 / median TPOT; fixtures' median = 0.95 x TPOT.
  EXPECT_NEAR(PointOf(*a, "fp8 KV", 16).tokens_per_s_per_user, 1000 / (14.5 * 0.95), 1e-9);
  EXPECT_TRUE(PointOf(*a, "fp8 KV", 16).on_pareto_front);   // most interactive
  EXPECT_TRUE(PointOf(*a, "fp8 KV", 64).on_pareto_front);   // most tokens per GPU
  EXPECT_FALSE(PointOf(*a, "bf16 KV", 16).on_pareto_front);
  EXPECT_FALSE(PointOf(*a, "bf16 KV", 64).on_pareto_front);
  EXPECT_DOUBLE_EQ(PointOf(*a, "fp8 KV", 64).pareto_y, 400);
  ReportOptions total;
  total.pareto_tokens = "total";
  auto t = Analyze(Kimi(), total);
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(PointOf(*t, "fp8 KV", 64).pareto_y, 2000);
  ReportOptions bad;
  bad.pareto_tokens = "outptu";
  EXPECT_FALSE(Analyze(Kimi(), bad).ok());
}

TEST(ReportAnalysis, SweepConfigurationsAreNamedByWhatDiffers) {
  auto r = LoadResults({kData + "/sweep"});
  ASSERT_TRUE(r.ok());
  auto a = Analyze(std::move(r).value(), {});
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->configs.size(), 2u);
  EXPECT_EQ(a->configs[0].label, "glm-5.2-sweep (weights=fp8)");
  EXPECT_EQ(a->configs[1].label, "glm-5.2-sweep (weights=int4)");
}

}  // namespace
}  // namespace capplan::report

namespace capplan::report {
namespace {

TEST(ReportAnalysis, EachConfigurationUsesTheNearestEarlierBaseline) {
  auto r = LoadResults({kData + "/kimi_bf16_kv_c16.json", kData + "/kimi_fp8_kv_c16.json",
                        kData + "/sweep"});
  ASSERT_TRUE(r.ok());
  ReportOptions o;
  o.baselines = {"glm-5.2-sweep (weights=fp8)", "bf16 KV"};
  auto a = Analyze(std::move(r).value(), o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_EQ(a->configs.size(), 4u);
  EXPECT_EQ(a->configs[1].baseline, 0);  // fp8 KV vs bf16 KV
  EXPECT_EQ(a->configs[3].baseline, 2);  // int4 vs fp8 weights
  EXPECT_EQ(a->points[a->configs[2].points[0]].baseline_point, -1);
  // int4 at concurrency 32 (1900 tok/s) vs fp8 at 32 (1500 tok/s).
  const Point& int4_32 = a->points[a->configs[3].points[1]];
  EXPECT_NEAR(*int4_32.output_cost_change, 1500.0 / 1900.0 - 1, 1e-9);
}

}  // namespace
}  // namespace capplan::report
