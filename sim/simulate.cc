// RunScenario: the run-time check, then the run driver (sim/run_driver.h)
// on every pool of the scenario (summary keys per sim/simulate.h; metric
// names as vLLM's and SGLang's serving benchmarks report them).
#include "sim/simulate.h"

#include <cstdio>

#include "common/memory_budget.h"
#include "sim/run_driver.h"
#include "sim/scenario.h"

namespace capplan::sim {

namespace {

// Wall time of a simulation, one core, per request and per output token.
// Measured with bench/sim_bench (2026-12-01): iteration by iteration costs
// 9.5 ns per output token in a batch of 64 (BM_KimiClosedLoop_1M/0: 1.02e9
// tokens in 9.7 s) and 23 ns in a batch of about 8 (BM_LlamaTrace_100k/0:
// 2.56e7 tokens in 0.55-0.9 s); fast-forward costs about 0.5 us per
// request (BM_KimiClosedLoop_1M/1: 1e6 requests in 0.52 s) and 1.7 us per
// request of a trace (BM_LlamaTrace_100k/1). The constants round up: an
// estimate is meant to catch runs that would take hours, not to predict.
constexpr double kSecondsPerRequest = 3e-6;
constexpr double kSecondsPerTokenIterated = 25e-9;
constexpr double kSecondsPerTokenFastForward = 1e-9;

Status CheckRunTime(const Scenario& sc, const RunOptions& options) {
  double tokens = 0;
  for (const RequestSpec& r : sc.workload.requests) tokens += static_cast<double>(r.output_tokens);
  const double n = static_cast<double>(sc.workload.requests.size());
  const double per_token =
      options.fast_forward ? kSecondsPerTokenFastForward : kSecondsPerTokenIterated;
  const double estimate = n * kSecondsPerRequest + tokens * per_token * sc.pools.size();
  char what[160];
  std::snprintf(what, sizeof(what), "%s: simulating %.0f requests (%.3g output tokens)%s",
                sc.origin.c_str(), n, tokens,
                options.fast_forward ? "" : " iteration by iteration (--no-fast-forward)");
  return CheckTimeEstimate(estimate, what,
                           options.fast_forward
                               ? "simulate fewer requests (--set workload.num_requests=N)"
                               : "drop --no-fast-forward or simulate fewer requests");
}

}  // namespace

Result<RunResult> RunScenario(const Scenario& sc, const RunOptions& options) {
  CAPPLAN_RETURN_IF_ERROR(CheckRunTime(sc, options));
  CAPPLAN_ASSIGN_OR_RETURN(PoolsRun run, RunPools(sc, options));
  CAPPLAN_RETURN_IF_ERROR(RequireCompletions(run));
  return std::move(run.result);
}

}  // namespace capplan::sim
