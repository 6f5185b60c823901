// The one run driver: every pool of a scenario on one event loop (sim/
// event_loop.h), the links between them, and what the run reports, written
// once: the per-request join (each request's end-to-end record is its state
// as it leaves the pool it entered by), the end-to-end statistics and cost,
// and one summary part per pool. A co-located scenario is one pool and no
// link; prefill and decode pools are two pools and a KV link (sim/pd_link.h).
//
// Requests stream out of the pools as they leave (sim/request_log.h): a run
// holds its requests in flight, plus what a link keeps of each.
#ifndef CAPPLAN_SIM_RUN_DRIVER_H_
#define CAPPLAN_SIM_RUN_DRIVER_H_

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "schema/run_summary.h"
#include "sim/event_loop.h"
#include "sim/prepared_run.h"
#include "sim/request_log.h"
#include "sim/serving_pool.h"
#include "sim/simulate.h"

namespace capplan::sim {

struct Scenario;  // sim/scenario.h

// The protocol between linked pools: it hears every pool's reservations,
// held prompts and failures (PoolListener), handles the events that belong
// to no pool (LinkHandler), sees each request leave each pool, and adds to
// the summary what only it knows.
class PoolLink : public PoolListener, public LinkHandler {
 public:
  // The pool hooks pool `i` runs with (sim/serving_pool.h PoolOptions).
  virtual PoolOptions OptionsFor(size_t i) const = 0;
  // Where requests enter and leave (its concurrency cap spans the request).
  virtual size_t exit_pool() const = 0;
  // The pools, indexed as the scenario's, before the loop starts.
  virtual void Attach(std::span<ServingPool* const> pools, EventQueue* queue) = 0;
  // Request r left pool `i`, done or failed (completion order). Returns
  // whether it failed there by its own doing (not for another pool's).
  virtual bool OnLeft(size_t i, const ReqState& r) = 0;
  // requests.csv as the link writes it: header, and the row of a request
  // that left the exit pool.
  virtual const char* CsvHeader() const = 0;
  virtual void AppendCsvRow(std::string* out, const ReqState& r) const = 0;
  // Conservation across the pools, once the loop drained.
  virtual Status Check() const = 0;
  // Pool names and roles, per-pool costs, stage times, the link's own block.
  virtual void AddToSummary(schema::RunSummary* s) const = 0;
  virtual nlohmann::json Trace() const = 0;
  // The error of a run in which every request failed.
  virtual std::string NoneCompleted(int64_t n) const = 0;
};

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

// Runs every pool of `sc` (sim/simulate.h RunOptions). A run in which every
// request failed is returned as it is (RunScenario refuses it).
Result<PoolsRun> RunPools(const Scenario& sc, const RunOptions& options);

// InvalidConfig when every request failed: such a run has no throughput,
// latency or cost to report (its summary would show $0 per million tokens).
inline Status RequireCompletions(const PoolsRun& run) { return run.completions; }

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_RUN_DRIVER_H_
