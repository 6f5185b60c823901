// One pool of a scenario made ready to simulate -- model shard, memory plan,
// step pricer, simulator config and request specs -- and the summary it
// reports from a finished simulation. RunScenario prepares every pool, runs
// them (one pool: Simulate; pools linked by a KV transfer: sim/pd/pd_run.h,
// all on one event loop) and summarizes each.
#ifndef CAPPLAN_SIM_PREPARED_RUN_H_
#define CAPPLAN_SIM_PREPARED_RUN_H_

#include <memory>
#include <vector>

#include "hw/profile.h"
#include "common/status.h"
#include "models/card.h"
#include "models/types.h"
#include "sim/simulate.h"
#include "sim/simulator.h"
#include "sim/step_pricer.h"

namespace capplan::sim {

class RequestLog;  // sim/request_log.h

class PreparedRun {
 public:
  struct State;  // sim/simulate.cc
  explicit PreparedRun(std::unique_ptr<State> st);
  ~PreparedRun();
  const SimConfig& config() const;
  // The scenario's workload as the pools read it.
  const RequestSource& requests() const;
  StepPricer& pricer();
  // What the run was prepared from (sim/pd plans the KV transfer with them).
  const models::ModelCard& card() const;
  const hw::HardwareProfile& profile() const;
  const models::ParallelLayout& layout() const;
  // The model as one GPU of the pool runs it, the cost model pricing it,
  // and whether its all-reduces run NVLS (sim/step_explain.h reads them).
  const models::ShardedModel& sharded() const;
  const CostModel& cost() const;
  bool nvls() const;
  // The summary (sim/simulate.h keys) and trace of `sim`; its requests
  // from `streamed` when they streamed out of the pool, else from
  // sim.requests.
  RunResult Summarize(const SimResult& sim, const RequestLog* streamed = nullptr) const;

 private:
  std::unique_ptr<State> st_;
};

// `scenario` must outlive the result. Errors name the scenario file and the
// JSON path, as RunScenario's do.
// Pool `pool` of the scenario (an index into Scenario::pools).
Result<std::unique_ptr<PreparedRun>> PrepareRun(const Scenario& scenario, size_t pool,
                                                const RunOptions& options);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_PREPARED_RUN_H_
