// Serving-benchmark statistics as vLLM and SGLang compute them
// (vllm-project/vllm vllm/benchmarks/serve.py, sgl-project/sglang
// python/sglang/bench_serving.py): request-weighted TTFT/TPOT/E2EL with
// numpy-style linearly interpolated percentiles, and token-weighted ITL.
// ITL is pooled over every token of every request, which is too many samples
// to keep for a 100k-request run, so it goes into a log histogram: 128
// buckets per power of two (values < 256 ns exact), so a percentile read at
// the bucket midpoint is within 2^-8 (0.4%) of the exact sample; the mean is
// exact.
#ifndef CAPPLAN_SIM_METRICS_H_
#define CAPPLAN_SIM_METRICS_H_

#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schema/run_summary.h"

namespace capplan::sim {

// numpy.percentile(values, p) with the default linear interpolation; 0 for
// an empty input. Sorts a copy.
double Percentile(std::vector<double> values, double p);
double Mean(const std::vector<double>& values);

class LogHistogram {
 public:
  LogHistogram();
  void Add(int64_t v, int64_t weight = 1) {
    // A step's tokens mostly share one gap: the bucket of the last value
    // is kept.
    if (v != last_v_) {
      last_v_ = v;
      last_i_ = Index(v);
    }
    AddToBucket(last_i_, v, weight);
  }
  // Add() for a caller that kept v's bucket (BucketOf(v)).
  static int BucketOf(int64_t v) { return Index(v); }
  void AddToBucket(int bucket, int64_t v, int64_t weight) {
    buckets_[bucket] += weight;
    count_ += weight;
    sum_ += v * weight;
  }
  int64_t count() const { return count_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0; }
  // Nearest-rank percentile (p in [0, 100]) at the bucket midpoint.
  double Percentile(double p) const;

 private:
  // Values < 256 map to themselves; above, 128 buckets per power of two
  // (the 8 leading bits).
  static int Index(int64_t v) {
    if (v < 256) return static_cast<int>(v < 0 ? 0 : v);
    const int shift = std::bit_width(static_cast<uint64_t>(v)) - 8;  // >= 1
    return 256 + (shift - 1) * 128 + static_cast<int>((v >> shift) - 128);
  }
  static double Midpoint(int idx);
  std::vector<int64_t> buckets_;
  int64_t count_ = 0;
  // Exact (292 years of summed nanoseconds fit), so the mean does not
  // depend on the order entries were added in.
  int64_t sum_ = 0;
  int64_t last_v_ = 0;
  int last_i_ = 0;  // Index(last_v_)
};

// Mean, median, p90, p95 and p99 of `ms` (milliseconds; 0 each when
// empty); a percentile interpolates between the two values around its
// position, as numpy's default does.
schema::Stats StatsOf(const std::vector<double>& ms);

// One request as the end-to-end (client-side) metrics see it: sent at
// send_ns (the TTFT/E2EL origin), first token, last token.
struct E2eRequest {
  int64_t send_ns = 0;
  int64_t first_token_ns = -1;
  int64_t finish_ns = -1;
  int64_t input = 0;
  int64_t generated = 0;
  bool done = false;  // completed; anything else counts as failed
  bool warmup = false;
  // TTFT's parts: queue time ends at the first admission (-1: not known);
  // the prefill time runs from there to the first token and includes the
  // time its steps waited for KV loaded back from a lower tier.
  int64_t admit_ns = -1;
  int64_t kv_load_ns = 0;
};

// SLOs for goodput, in milliseconds (a scenario's `slo`).
struct SloLimits {
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
  bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};

struct E2eTotals {
  int64_t completed = 0, failed = 0, input_tokens = 0, output_tokens = 0;
  double duration_s = 0;
  double cost_usd = 0;
  // Requests in flight on average over the measured window (Little's law:
  // the measured requests' send-to-finish times over the window's span).
  double mean_in_flight = 0;
};

// The end-to-end statistics of requests added one at a time (a run's
// requests as they finish, in request index order so that sums add up in
// the same order however the run went): every completed request's TTFT,
// TPOT and E2EL, 24 bytes each, for exact percentiles.
// A histogram of ns as milliseconds: exact mean, percentiles at bucket
// midpoints.
schema::Stats StatsOfNs(const LogHistogram& h);

class E2eAccumulator {
 public:
  // Which parts of TTFT a run reports: none (linked pools report theirs
  // per pool), queue and prefill (one pool that takes requests from the
  // client), and the KV load wait too when KV tiers sit below the GPU.
  enum class TtftSplit : uint8_t { kNone, kQueuePrefill, kQueuePrefillLoad };

  explicit E2eAccumulator(const SloLimits& slo = {}, TtftSplit split = TtftSplit::kNone)
      : slo_(slo), split_(split) {}
  void Add(const E2eRequest& r);
  // Room for n completed requests: a large run's vectors take their size
  // once instead of growing by doubling.
  void Reserve(int64_t n);
  int64_t completed() const { return t_.completed; }
  int64_t failed() const { return t_.failed; }
  // The summary part below, from what was added.
  E2eTotals Summarize(int gpus, double usd_per_gpu_hour, schema::RunSummary* s) const;

 private:
  SloLimits slo_;
  TtftSplit split_;
  std::vector<double> ttft_, tpot_, e2el_;
  // TTFT's parts in ns: bucketed (about 0.4%) rather than kept per request,
  // since they explain TTFT rather than stand for it; their means are exact.
  LogHistogram queue_ns_, prefill_ns_, kv_load_ns_;
  E2eTotals t_;
  int64_t good_ = 0;
  int64_t t0_ = INT64_MAX, t1_ = 0;
  int64_t in_flight_ns_ = 0;  // sum of the measured requests' finish - send
};

// The end-to-end part every run reports (sim/simulate.h contract):
// completed, failed, duration_s, total_{input,output}_tokens, throughputs
// (per GPU too), TTFT/TPOT/E2EL statistics, goodput (when SLOs are given),
// gpus, usd_per_gpu_hour, cost_usd and cost per million tokens
// (schema::CostPerMillionTokens). Warmup requests count in neither
// statistics nor totals.
E2eTotals AddEndToEndSummary(const std::vector<E2eRequest>& reqs, int gpus, double usd_per_gpu_hour,
                             const SloLimits& slo, schema::RunSummary* s);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_METRICS_H_
