#include "sim/steady_state.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace capplan::sim {

namespace {

bool IsClosedLoop(const Workload& w) { return w.kind == "closed_loop" && w.concurrency > 0; }

// The pool whose requests leave the run: the co-located one, or the decode
// pool of a disaggregated run.
schema::PoolSummary* ExitPool(schema::RunSummary* s) {
  for (schema::PoolSummary& p : s->pools) {
    if (p.role != schema::PoolRole::kPrefill) return &p;
  }
  return s->pools.empty() ? nullptr : &s->pools.back();
}

std::string ShortWindowWarning(const Workload& w, double occupancy) {
  const int64_t c = w.concurrency;
  const int64_t n = static_cast<int64_t>(w.requests.size());
  // The shortfall shrinks as 1 / the measured waves (a ragged last wave, a
  // warm-up shorter than one wave): scale the waves to bring it under the
  // threshold, with a quarter to spare, and never below the default's.
  const double measured = static_cast<double>(n - w.warmup_requests) / static_cast<double>(c);
  const double scale = 1.25 * (1 - occupancy) / (1 - kSteadyOccupancy);
  const int64_t waves = std::max<int64_t>(kClosedLoopDefaultWaves,
                                          static_cast<int64_t>(std::ceil(measured * scale)));
  char buf[640];
  std::snprintf(buf, sizeof(buf),
                "steady state not reached: the measured window kept %.2f of concurrency %lld in "
                "flight on average (Little's law over %lld requests after %lld warm-up), so "
                "throughput, TTFT and TPOT still move with the run's length and their intervals "
                "are widened by that factor; set workload.warmup_requests to at least %lld (one "
                "full wave) and workload.num_requests to %lld (whole waves after it), or leave "
                "both out for a window that reaches it",
                occupancy, static_cast<long long>(c), static_cast<long long>(n - w.warmup_requests),
                static_cast<long long>(w.warmup_requests), static_cast<long long>(c),
                static_cast<long long>(c + waves * c));
  return buf;
}

}  // namespace

std::optional<double> WindowOccupancy(const Workload& w, const E2eTotals& t) {
  if (!IsClosedLoop(w) || t.duration_s <= 0) return std::nullopt;
  return t.mean_in_flight / static_cast<double>(w.concurrency);
}

void AddSteadyStateCheck(const Workload& w, const E2eTotals& t, schema::RunSummary* s) {
  if (t.duration_s <= 0) return;
  s->mean_requests_in_flight = t.mean_in_flight;
  const std::optional<double> occupancy = WindowOccupancy(w, t);
  if (!occupancy) return;
  s->window_occupancy = *occupancy;
  s->notes["window_occupancy"] =
      "mean requests in flight over the measured window / the closed loop's concurrency; below " +
      std::to_string(kSteadyOccupancy).substr(0, 4) + " the window has not reached steady state";
  if (*occupancy >= kSteadyOccupancy) return;
  schema::PoolSummary* exit = ExitPool(s);
  if (exit == nullptr) return;
  if (!exit->warnings) exit->warnings.emplace();
  exit->warnings->push_back(ShortWindowWarning(w, *occupancy));
}

}  // namespace capplan::sim
