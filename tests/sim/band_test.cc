// Prediction bands built from what priced a run (sim/prediction_intervals.h):
// a measured op's band is narrower than the same op priced cross-version or
// by an assumed table, every throughput metric has a band, and a KV-starved
// run's band is wider than the same run with ample KV.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "schema/run_summary.h"
#include "sim/prediction_intervals.h"
#include "sim/scenario.h"
#include "sim/simulate.h"

namespace capplan::sim {
namespace {

// Llama-3.1-8B on one H200 under vLLM: its BF16 GEMMs and FA3 prefill are
// priced by tables of vLLM 0.24.0 records (calibrate/profiles/h200-sxm.json).
Result<schema::RunSummary> RunVllm(const std::string& version, double mem_fraction, int concurrency,
                               int output_tokens) {
  const nlohmann::json doc = {
      {"name", "t"},
      {"model", "llama-3.1-8b"},
      {"hardware", "h200-sxm"},
      {"deployment",
       {{"gpus", 1},
        {"tp", 1},
        {"engine", "vllm"},
        {"engine_version", version},
        {"mem_fraction_static", mem_fraction}}},
      {"workload",
       {{"kind", "closed_loop"},
        {"concurrency", concurrency},
        {"num_requests", 4 * concurrency},
        {"warmup_requests", concurrency},
        {"input_tokens", {{"dist", "fixed"}, {"value", 2000}}},
        {"output_tokens", {{"dist", "fixed"}, {"value", output_tokens}}},
        {"seed", 1}}}};
  CAPPLAN_ASSIGN_OR_RETURN(auto sc, ParseScenario(doc, "t.json"));
  CAPPLAN_ASSIGN_OR_RETURN(RunResult r, RunScenario(*sc, RunOptions{}));
  return r.summary;
}

const BandModel& Shipped() {
  auto m = GetBandModel();
  EXPECT_TRUE(m.ok()) << m.status().message();
  return **m;
}

double Share(const BandInputs& in, OpProvenance p) { return in.share[static_cast<int>(p)]; }

TEST(Bands, MeasuredOpsNarrowerThanCrossVersionOrAssumed) {
  auto own = RunVllm("0.24.0", 0.9, 16, 64);
  auto old = RunVllm("0.10.0", 0.9, 16, 64);
  ASSERT_TRUE(own.ok()) << own.status().message();
  ASSERT_TRUE(old.ok()) << old.status().message();
  const BandInputs a = BandInputsOf(*own), b = BandInputsOf(*old);
  // At 0.24.0 the tables were measured at that release; at 0.10.0 they
  // price its ops cross-version.
  EXPECT_GT(Share(a, OpProvenance::kMeasured), 0.5);
  EXPECT_EQ(Share(a, OpProvenance::kCrossVersion), 0);
  EXPECT_GT(Share(b, OpProvenance::kCrossVersion), 0.5);
  EXPECT_LT(Share(b, OpProvenance::kMeasured), 0.01);
  const int measured = static_cast<int>(OpProvenance::kMeasured);
  const int cross = static_cast<int>(OpProvenance::kCrossVersion);
  const int assumed_class = static_cast<int>(OpProvenance::kAssumed);
  EXPECT_GT(b.spread[cross], a.spread[measured]);
  // The 0.24.0 step with its measured time priced cross-version (the
  // tables' fit spread plus their 8.885% drift), or by assumed tables.
  BandInputs cross_step = a, assumed = a;
  cross_step.share[cross] = a.share[measured];
  cross_step.spread[cross] = std::hypot(a.spread[measured], DriftSpread(0.08885));
  cross_step.share[measured] = cross_step.spread[measured] = 0;
  assumed.share[assumed_class] += a.share[measured];
  assumed.share[measured] = assumed.spread[measured] = 0;
  // The shipped fit charges the time not measured at the release with its
  // own term (the serving rows priced away from their release miss more),
  // so the measured step's band is narrower by a margin, not a rounding.
  const BandModel& m = Shipped();
  for (int g = 0; g < kNumBandGroups; ++g) {
    const BandGroup group = static_cast<BandGroup>(g);
    EXPECT_GT(m.groups[g].unmeasured, 0) << kBandGroupNames[g];
    EXPECT_LT(1.15 * BandSigma(m, group, a), BandSigma(m, group, cross_step))
        << kBandGroupNames[g];
    EXPECT_LT(1.15 * BandSigma(m, group, a), BandSigma(m, group, assumed)) << kBandGroupNames[g];
    EXPECT_LT(BandSigma(m, group, cross_step), BandSigma(m, group, assumed))
        << kBandGroupNames[g];
  }
  // The summaries say it: the 0.24.0 run's TPOT band is the narrower.
  const auto width = [](const schema::RunSummary& s, const std::string& key) {
    const schema::Interval& iv = s.intervals.at(key);
    return std::log(iv.hi / iv.lo);
  };
  EXPECT_LT(width(*own, "median_tpot_ms"), width(*old, "median_tpot_ms"));
}

TEST(Bands, EveryThroughputMetricAndTtftTpotHaveABand) {
  auto run = RunVllm("0.24.0", 0.9, 16, 64);
  ASSERT_TRUE(run.ok()) << run.status().message();
  for (const char* key :
       {"total_token_throughput", "input_throughput", "output_throughput", "request_throughput",
        "total_token_throughput_per_gpu", "output_throughput_per_gpu", "mean_ttft_ms",
        "p99_ttft_ms", "mean_tpot_ms", "median_itl_ms", "mean_e2el_ms"}) {
    const std::optional<double> x = schema::Metric(*run, key);
    ASSERT_TRUE(x) << key;
    ASSERT_TRUE(run->intervals.count(key)) << key;
    EXPECT_LT(run->intervals.at(key).lo, *x) << key;
    EXPECT_GT(run->intervals.at(key).hi, *x) << key;
  }
  const nlohmann::json j = schema::ToJson(*run);
  EXPECT_TRUE(j.contains("total_token_throughput_lo"));
  EXPECT_TRUE(j.contains("provenance_time_share"));
  // Summaries round-trip their provenance.
  auto back = schema::FromJson(j, "summary.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  const BandInputs a = BandInputsOf(*run), b = BandInputsOf(*back);
  for (int i = 0; i < kNumOpProvenances; ++i) EXPECT_NEAR(a.share[i], b.share[i], 1e-12);
}

TEST(Bands, KvStarvedRunWiderThanTheSameRunWithAmpleKv) {
  // 256 requests of 3000 tokens: 0.62 of the GPU leaves too little KV and
  // the scheduler preempts; 0.9 holds them all.
  auto starved = RunVllm("0.24.0", 0.62, 256, 1000);
  auto ample = RunVllm("0.24.0", 0.9, 256, 1000);
  ASSERT_TRUE(starved.ok()) << starved.status().message();
  ASSERT_TRUE(ample.ok()) << ample.status().message();
  const BandInputs s = BandInputsOf(*starved), a = BandInputsOf(*ample);
  EXPECT_TRUE(s.regime[static_cast<int>(Regime::kKvBound)]);
  EXPECT_TRUE(s.regime[static_cast<int>(Regime::kPreempting)]);
  EXPECT_FALSE(a.regime[static_cast<int>(Regime::kKvBound)]);
  EXPECT_FALSE(a.regime[static_cast<int>(Regime::kPreempting)]);
  // The regime terms are the fit's (calibrate/intervals.h: 0 where the
  // serving rows in a regime need no more than the rest); with one, the
  // starved run's band is the wider, with none the two are alike.
  BandModel m = Shipped();
  for (int g = 0; g < kNumBandGroups; ++g) {
    const BandGroup group = static_cast<BandGroup>(g);
    EXPECT_GE(BandSigma(m, group, s), BandSigma(m, group, a) - 0.02) << kBandGroupNames[g];
  }
  m.regime_sigma[static_cast<int>(Regime::kKvBound)] = 0.1;
  for (int g = 0; g < kNumBandGroups; ++g) {
    const BandGroup group = static_cast<BandGroup>(g);
    EXPECT_GT(BandSigma(m, group, s), BandSigma(m, group, a)) << kBandGroupNames[g];
  }
}

TEST(Bands, GroupsOfMetricKeys) {
  EXPECT_EQ(BandGroupOf("total_token_throughput_per_gpu"), BandGroup::kThroughput);
  EXPECT_EQ(BandGroupOf("p90_ttft_ms"), BandGroup::kTtft);
  EXPECT_EQ(BandGroupOf("mean_itl_ms"), BandGroup::kTpot);
  EXPECT_EQ(BandGroupOf("decode_step_ms"), BandGroup::kTpot);
  EXPECT_EQ(BandGroupOf("mean_e2el_ms"), BandGroup::kE2el);
  EXPECT_FALSE(BandGroupOf("gpu_joules_per_output_token"));
  EXPECT_FALSE(BandGroupOf("kv_capacity_tokens"));
}

TEST(Bands, BadFilesAreOneLineErrors) {
  auto r = ParseBandModel(R"({"format": "capplan.prediction_intervals.v2", "coverage": 0.8})",
                          "intervals.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("intervals.json: /format"), std::string::npos)
      << r.status().message();
  r = ParseBandModel(R"({"format": "capplan.prediction_intervals.v3", "coverage": 0.8,
      "priors": {"assumed": {"sigma": -1}}})",
                     "intervals.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("intervals.json: /priors/assumed/sigma"),
            std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace capplan::sim
