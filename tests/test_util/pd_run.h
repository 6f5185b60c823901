// A prefill/decode scenario run through the run driver with what the KV link
// kept of each request (its time in each stage) and the transfer it planned:
// what the PD tests check beside the summary.
#ifndef CAPPLAN_TESTS_TEST_UTIL_PD_RUN_H_
#define CAPPLAN_TESTS_TEST_UTIL_PD_RUN_H_

#include <utility>
#include <vector>

#include "common/status.h"
#include "schema/run_summary.h"
#include "sim/pd/kv_transfer.h"
#include "sim/pd_link.h"
#include "sim/run_driver.h"
#include "sim/run_options.h"
#include "sim/scenario.h"

namespace capplan::sim::pd {

struct PdRunResult {
  schema::RunSummary summary;
  std::vector<PdRequest> requests;  // workload order
  KvTransferPlan transfer;
  // Ok, or the error of a run in which every request failed.
  Status completions;
};

// From `options`: fast_forward and the progress bar. A run in which every
// request failed is returned as it is (RequireCompletions).
inline Result<PdRunResult> RunPd(const Scenario& sc, const RunOptions& options = RunOptions{}) {
  if (sc.pool_link != "pd") return Status::Internal(sc.origin + ": not a prefill/decode scenario");
  RunOptions o;
  o.fast_forward = options.fast_forward;
  o.progress = options.progress;
  CAPPLAN_ASSIGN_OR_RETURN(PoolsRun run, RunPools(sc, o));
  PdRunResult out;
  out.summary = std::move(run.result.summary);
  out.requests = KvLinkRequests(*run.link);
  out.transfer = KvLinkPlan(*run.link);
  out.completions = run.completions;
  return out;
}

// InvalidConfig when every request failed, as the CLI and sweeps report it.
inline Status RequireCompletions(const PdRunResult& run) { return run.completions; }

}  // namespace capplan::sim::pd

#endif  // CAPPLAN_TESTS_TEST_UTIL_PD_RUN_H_
