#include "sim/metrics.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>

#include "common/huge_pages.h"
#include "sim/order_statistics.h"

namespace capplan::sim {

namespace {

double SortedPercentile(const std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const double pos = p / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return SortedPercentile(v, p);
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

LogHistogram::LogHistogram() : buckets_(256 + 56 * 128, 0) {}

double LogHistogram::Midpoint(int idx) {
  if (idx < 256) return idx;
  const int shift = (idx - 256) / 128 + 1;
  const int64_t top = (idx - 256) % 128 + 128;
  return static_cast<double>(top << shift) + static_cast<double>(int64_t{1} << shift) / 2.0;
}

double LogHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(p / 100.0 * count_)));
  int64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) return Midpoint(static_cast<int>(i));
  }
  return Midpoint(static_cast<int>(buckets_.size() - 1));
}

schema::Stats StatsOf(const std::vector<double>& v) {
  schema::Stats s;
  s.mean = Mean(v);
  if (v.empty()) {
    s.median = s.p90 = s.p95 = s.p99 = 0.0;
    return s;
  }
  // Each percentile interpolates between two order statistics.
  constexpr double kPercent[4] = {50, 90, 95, 99};
  double pos[4];
  size_t ranks[8];
  for (int i = 0; i < 4; ++i) {
    pos[i] = kPercent[i] / 100.0 * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos[i]));
    ranks[2 * i] = lo;
    ranks[2 * i + 1] = std::min(lo + 1, v.size() - 1);
  }
  double at[8];
  OrderStatistics(v, ranks, at);
  std::optional<double>* const out[4] = {&s.median, &s.p90, &s.p95, &s.p99};
  for (int i = 0; i < 4; ++i) {
    const double a = at[2 * i], b = at[2 * i + 1];
    *out[i] = a + (b - a) * (pos[i] - static_cast<double>(ranks[2 * i]));
  }
  return s;
}

schema::Stats StatsOfNs(const LogHistogram& h) {
  return schema::Stats{h.mean() / 1e6, h.Percentile(50) / 1e6, h.Percentile(90) / 1e6,
                       h.Percentile(95) / 1e6, h.Percentile(99) / 1e6};
}

void E2eAccumulator::Reserve(int64_t n) {
  const size_t k = static_cast<size_t>(std::max<int64_t>(0, n));
  common::ReserveHugePages(&ttft_, k);
  common::ReserveHugePages(&tpot_, k);
  common::ReserveHugePages(&e2el_, k);
}

void E2eAccumulator::Add(const E2eRequest& r) {
  auto ms = [](int64_t ns) { return static_cast<double>(ns) / 1e6; };
  if (!r.done) ++t_.failed;
  if (r.warmup || !r.done) return;
  ++t_.completed;
  t_.input_tokens += r.input;
  t_.output_tokens += r.generated;
  t0_ = std::min(t0_, r.send_ns);
  t1_ = std::max(t1_, r.finish_ns);
  in_flight_ns_ += r.finish_ns - r.send_ns;
  const double tt = ms(r.first_token_ns - r.send_ns);
  const double ee = ms(r.finish_ns - r.send_ns);
  const double tp = r.generated > 1 ? (ee - tt) / (r.generated - 1) : 0;
  ttft_.push_back(tt);
  e2el_.push_back(ee);
  if (split_ != TtftSplit::kNone && r.admit_ns >= 0) {
    queue_ns_.Add(r.admit_ns - r.send_ns);
    prefill_ns_.Add(r.first_token_ns - r.admit_ns);
    if (split_ == TtftSplit::kQueuePrefillLoad) kv_load_ns_.Add(r.kv_load_ns);
  }
  if (r.generated > 1) tpot_.push_back(tp);
  if (slo_.any()) {
    // DistServe/vLLM goodput: every listed metric within its SLO; TPOT
    // counts as 0 for requests with <= 1 output token.
    good_ += (!slo_.ttft_ms || tt <= *slo_.ttft_ms) && (!slo_.tpot_ms || tp <= *slo_.tpot_ms) &&
             (!slo_.e2el_ms || ee <= *slo_.e2el_ms);
  }
}

E2eTotals AddEndToEndSummary(const std::vector<E2eRequest>& reqs, int gpus, double usd_per_gpu_hour,
                             const SloLimits& slo, schema::RunSummary* out) {
  E2eAccumulator acc(slo);
  for (const E2eRequest& r : reqs) acc.Add(r);
  return acc.Summarize(gpus, usd_per_gpu_hour, out);
}

E2eTotals E2eAccumulator::Summarize(int gpus, double usd_per_gpu_hour,
                                    schema::RunSummary* out) const {
  const SloLimits& slo = slo_;
  const int64_t good = good_, t0 = t0_, t1 = t1_;
  const std::vector<double>&ttft = ttft_, &tpot = tpot_, &e2el = e2el_;
  E2eTotals t = t_;
  t.duration_s = t.completed > 0 ? static_cast<double>(t1 - t0) / 1e9 : 0;
  if (t1 > t0) t.mean_in_flight = static_cast<double>(in_flight_ns_) / static_cast<double>(t1 - t0);
  const double duration = t.duration_s;
  auto per_s = [&](double x) { return duration > 0 ? x / duration : 0.0; };
  const int64_t in_tok = t.input_tokens, out_tok = t.output_tokens;
  schema::RunSummary& s = *out;
  s.completed = t.completed;
  s.failed = t.failed;
  s.duration_s = duration;
  s.total_input_tokens = in_tok;
  s.total_output_tokens = out_tok;
  s.request_throughput = per_s(t.completed);
  s.input_throughput = per_s(in_tok);
  s.output_throughput = per_s(out_tok);
  s.total_token_throughput = per_s(in_tok + out_tok);
  s.output_throughput_per_gpu = per_s(out_tok) / gpus;
  s.total_token_throughput_per_gpu = per_s(in_tok + out_tok) / gpus;
  s.ttft = StatsOf(ttft);
  s.tpot = StatsOf(tpot);
  s.e2el = StatsOf(e2el);
  if (queue_ns_.count() > 0) {
    s.queue_time = StatsOfNs(queue_ns_);
    s.prefill_time = StatsOfNs(prefill_ns_);
  }
  if (kv_load_ns_.count() > 0) s.kv_load_time = StatsOfNs(kv_load_ns_);
  if (slo.any()) {
    schema::Goodput g;
    if (slo.ttft_ms) g.slo["ttft_ms"] = *slo.ttft_ms;
    if (slo.tpot_ms) g.slo["tpot_ms"] = *slo.tpot_ms;
    if (slo.e2el_ms) g.slo["e2el_ms"] = *slo.e2el_ms;
    g.good_requests = good;
    g.request_goodput = per_s(good);
    g.good_fraction = t.completed ? static_cast<double>(good) / t.completed : 0.0;
    s.goodput = std::move(g);
  }
  s.gpus = gpus;
  s.usd_per_gpu_hour = usd_per_gpu_hour;
  t.cost_usd = usd_per_gpu_hour * gpus * duration / 3600.0;
  s.cost_usd = t.cost_usd;
  s.cost_usd_per_million_output_tokens =
      schema::CostPerMillionTokens(usd_per_gpu_hour, gpus, duration, static_cast<double>(out_tok));
  s.cost_usd_per_million_total_tokens = schema::CostPerMillionTokens(
      usd_per_gpu_hour, gpus, duration, static_cast<double>(in_tok + out_tok));
  s.notes["cost_tokens"] =
      "output: output tokens only; total: input + output tokens; usd = usd_per_gpu_hour * gpus * "
      "duration_s / 3600";
  return t;
}

}  // namespace capplan::sim
