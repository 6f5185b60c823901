#include "sim/metrics.h"
#include "sim/prediction_intervals.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/kv_pool.h"
#include "sim/step_pricer.h"

namespace capplan::sim {
namespace {

TEST(SimMetrics, PercentileMatchesNumpyLinear) {
  // numpy.percentile([1, 2, 3, 4], [50, 90, 99]) = 2.5, 3.7, 3.97
  std::vector<double> v{4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 2.5);
  EXPECT_NEAR(Percentile(v, 90), 3.7, 1e-12);
  EXPECT_NEAR(Percentile(v, 99), 3.97, 1e-12);
  EXPECT_DOUBLE_EQ(Percentile({}, 50), 0);
  EXPECT_DOUBLE_EQ(Mean(v), 2.5);
}

TEST(SimMetrics, LogHistogramWithinDocumentedError) {
  LogHistogram h;
  for (int64_t v : {int64_t{5}, int64_t{300}, int64_t{1000}, int64_t{123456789}, int64_t{9000000000}}) {
    LogHistogram one;
    one.Add(v);
    EXPECT_NEAR(one.Percentile(50), static_cast<double>(v), v / 256.0 + 1e-9) << v;
  }
  for (int i = 1; i <= 1000; ++i) h.Add(i * 1000);
  EXPECT_NEAR(h.Percentile(50), 500000, 500000 / 256.0);
  EXPECT_NEAR(h.Percentile(99), 990000, 990000 / 256.0);
  EXPECT_DOUBLE_EQ(h.mean(), 500500.0);
  h.Add(7, 1000);  // weights count as samples
  EXPECT_EQ(h.count(), 2000);
  EXPECT_DOUBLE_EQ(h.Percentile(10), 7);
}

TEST(SimMetrics, BucketValueWithinDocumentedBound) {
  for (int64_t v : std::vector<int64_t>{0, 1, 255, 256, 1000, 65537, 1234567, 987654321987}) {
    const int64_t b = BucketValue(v);
    EXPECT_LE(std::abs(static_cast<double>(b - v)), v / 512.0 + 1) << v;
  }
  // Nearby values share a bucket (that is what makes the memo hit).
  EXPECT_EQ(BucketValue(1 << 20), BucketValue((1 << 20) + 100));
}

TEST(SimKvPool, AllocateNeverOvercommits) {
  KvPool p(1000, 64);  // 15 whole pages
  EXPECT_EQ(p.total_pages(), 15);
  EXPECT_EQ(p.PagesFor(65), 2);
  EXPECT_TRUE(p.Allocate(10));
  EXPECT_FALSE(p.Allocate(6));
  EXPECT_EQ(p.free_pages(), 5);
  EXPECT_TRUE(p.Allocate(5));
  EXPECT_EQ(p.peak_used_pages(), 15);
  p.Free(15);
  EXPECT_EQ(p.free_pages(), p.total_pages());
}

}  // namespace
// The shipped band model gives every banded metric p the band
// p x exp(+-half), half the same for every metric of a group.
TEST(PredictionIntervals, OneHalfWidthPerGroup) {
  auto m = GetBandModel();
  ASSERT_TRUE(m.ok()) << m.status().message();
  schema::RunSummary run;
  run.output_throughput = 100.0;
  run.total_token_throughput = 300.0;
  run.ttft.p90 = 50.0;
  run.tpot.mean = 20.0;
  run.e2el.mean = 7.0;
  run.pools.emplace_back();
  ASSERT_TRUE(AddPredictionIntervals(&run).ok());
  const nlohmann::json s = schema::ToJson(run);
  const BandInputs in = BandInputsOf(run);
  const double thr = kNormalZ80 * BandSigma(**m, BandGroup::kThroughput, in);
  EXPECT_DOUBLE_EQ(s["output_throughput_lo"].get<double>(), 100.0 * std::exp(-thr));
  EXPECT_DOUBLE_EQ(s["total_token_throughput_hi"].get<double>(), 300.0 * std::exp(thr));
  const double ttft = kNormalZ80 * BandSigma(**m, BandGroup::kTtft, in);
  EXPECT_DOUBLE_EQ(s["p90_ttft_ms_hi"].get<double>(), 50.0 * std::exp(ttft));
  EXPECT_TRUE(s.contains("mean_tpot_ms_lo"));
  EXPECT_TRUE(s.contains("mean_e2el_ms_lo"));
}

// TTFT's parts: the means add up to the mean TTFT exactly; a run whose
// requests come through linked pools reports none; the load wait only with
// KV tiers.
TEST(E2eAccumulatorSplit, QueueAndPrefillAddUpToTtft) {
  using Split = E2eAccumulator::TtftSplit;
  const std::vector<E2eRequest> reqs = {
      {.send_ns = 0, .first_token_ns = 5'000'000, .finish_ns = 9'000'000, .input = 10,
       .generated = 5, .done = true, .admit_ns = 3'000'000, .kv_load_ns = 1'000'000},
      {.send_ns = 1'000'000, .first_token_ns = 2'000'000, .finish_ns = 4'000'000, .input = 10,
       .generated = 3, .done = true, .admit_ns = 1'000'000},
      // Warm-up requests count in no statistic.
      {.send_ns = 0, .first_token_ns = 1'000'000, .finish_ns = 2'000'000, .input = 1,
       .generated = 2, .done = true, .warmup = true, .admit_ns = 0}};
  auto summarize = [&](Split split) {
    E2eAccumulator acc({}, split);
    for (const E2eRequest& r : reqs) acc.Add(r);
    schema::RunSummary s;
    acc.Summarize(1, 1.0, &s);
    return s;
  };
  const schema::RunSummary load = summarize(Split::kQueuePrefillLoad);
  EXPECT_DOUBLE_EQ(*load.ttft.mean, 3.0);  // (5 + 1) / 2 ms
  EXPECT_DOUBLE_EQ(*load.queue_time.mean, 1.5);
  EXPECT_DOUBLE_EQ(*load.prefill_time.mean, 1.5);
  EXPECT_DOUBLE_EQ(*load.queue_time.mean + *load.prefill_time.mean, *load.ttft.mean);
  EXPECT_DOUBLE_EQ(*load.kv_load_time.mean, 0.5);
  const schema::RunSummary plain = summarize(Split::kQueuePrefill);
  EXPECT_DOUBLE_EQ(*plain.queue_time.mean, 1.5);
  EXPECT_FALSE(plain.kv_load_time.mean.has_value());
  const schema::RunSummary none = summarize(Split::kNone);
  EXPECT_TRUE(none.queue_time.empty());
  EXPECT_TRUE(none.prefill_time.empty());
  // Written as vLLM-style keys and read back.
  const nlohmann::json j = schema::ToJson(load);
  EXPECT_DOUBLE_EQ(j.at("mean_queue_time_ms").get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j.at("mean_kv_load_time_ms").get<double>(), 0.5);
  auto back = schema::FromJson(j, "<test>");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(schema::ToJson(*back), j);
}

}  // namespace capplan::sim
