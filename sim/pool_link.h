// The protocol between linked pools, and the registry the run driver
// (sim/run_driver.h) finds a scenario's link in by name
// (Scenario::pool_link), so the driver names no concrete link: a new link is
// its own file and one PoolLinks().Add line in sim/pool_link.cc.
#ifndef CAPPLAN_SIM_POOL_LINK_H_
#define CAPPLAN_SIM_POOL_LINK_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "common/registry.h"
#include "common/status.h"
#include "schema/run_summary.h"
#include "sim/event_loop.h"
#include "sim/serving_pool.h"

namespace capplan::sim {

struct Scenario;    // sim/scenario.h
class PreparedRun;  // sim/prepared_run.h

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

// The link of `sc` over its prepared pools, indexed as Scenario::pools.
using PoolLinkFactory = std::function<Result<std::unique_ptr<PoolLink>>(
    const Scenario& sc, const std::vector<std::unique_ptr<PreparedRun>>& pools)>;
Registry<PoolLinkFactory>& PoolLinks();

namespace pd {
// "pd": a prefill pool and a decode pool joined by a KV transfer
// (sim/pd_link.h, SGLang's disaggregation protocol).
Result<std::unique_ptr<PoolLink>> MakeKvLink(
    const Scenario& sc, const std::vector<std::unique_ptr<PreparedRun>>& pools);
}  // namespace pd

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_POOL_LINK_H_
