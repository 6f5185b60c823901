// The one run driver: every pool of a scenario on one event loop (sim/
// event_loop.h), the links between them, and what the run reports, written
// once: the per-request join (each request's end-to-end record is its state
// as it leaves the pool it entered by), the end-to-end statistics and cost,
// and one summary part per pool. A co-located scenario is one pool and no
// link; prefill and decode pools are two pools and a KV link (sim/pd_link.h),
// found by name in the link registry (sim/pool_link.h).
//
// Requests stream out of the pools as they leave (sim/request_log.h): a run
// holds its requests in flight, plus what a link keeps of each.
#ifndef CAPPLAN_SIM_RUN_DRIVER_H_
#define CAPPLAN_SIM_RUN_DRIVER_H_

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "schema/run_summary.h"
#include "sim/metrics.h"
#include "sim/pool_link.h"
#include "sim/prepared_run.h"
#include "sim/request_log.h"
#include "sim/run_options.h"
#include "sim/serving_pool.h"

namespace capplan::sim {

struct Scenario;  // sim/scenario.h

// The parts of TTFT a run of sc reports: queue and prefill where one pool
// takes the client's requests (linked pools give theirs per stage), and the
// KV load wait too when that pool has a host KV tier.
E2eAccumulator::TtftSplit TtftSplitOf(const Scenario& sc);

// One request leaving a pool, counted into its tally.
void CountLeft(const ReqState& r, PoolTally* t);

// The run's summary: the scenario and its hardware profile, the end-to-end
// statistics and cost of the requests `log` passed (over every pool's
// GPUs; with several pools, each pool's share of the cost), the ITL of the
// pool where tokens after the first come from (`exit`), and the pool parts.
schema::RunSummary SummarizeRun(const Scenario& sc, const hw::HardwareProfile& profile,
                                const RequestLog& log, const SimResult& exit,
                                std::vector<schema::PoolSummary> pools);

// What RunPools returns: the run's result, and the link (null for one
// pool) with what it kept of each request (tests read the PD link's).
struct PoolsRun {
  RunResult result;
  std::unique_ptr<PoolLink> link;
  // Ok, or the error of a run in which every request failed.
  Status completions;
};

// Runs every pool of `sc` (sim/run_options.h RunOptions). A run in which every
// request failed is returned as it is (RunScenario refuses it).
Result<PoolsRun> RunPools(const Scenario& sc, const RunOptions& options);

// InvalidConfig when every request failed: such a run has no throughput,
// latency or cost to report (its summary would show $0 per million tokens).
inline Status RequireCompletions(const PoolsRun& run) { return run.completions; }

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_RUN_DRIVER_H_
