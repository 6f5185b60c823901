// One pool of a scenario made ready to simulate -- model shard, memory plan,
// step pricer, simulator config and request specs -- and the part of the
// summary only it can write (its deployment, memory, KV and where its time
// went). The run driver (sim/run_driver.h) prepares every pool of a
// scenario, runs them on one event loop and writes the rest once.
#ifndef CAPPLAN_SIM_PREPARED_RUN_H_
#define CAPPLAN_SIM_PREPARED_RUN_H_

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/status.h"
#include "hw/profile.h"
#include "models/card.h"
#include "models/types.h"
#include "sim/run_options.h"
#include "sim/sim_config.h"
#include "sim/step_pricer.h"

namespace capplan::sim {

struct Scenario;  // sim/scenario.h

// What one pool's own requests came to as they left it: every request that
// left, those completed there (warmup left out, as the end-to-end statistics
// count them) and those failed there (warmup included). With linked pools a
// request another pool failed also leaves this one failed (conservation);
// `failed_here` then counts only this pool's own failures.
struct PoolTally {
  int64_t left = 0;
  int64_t completed = 0;
  int64_t failed = 0;
  int64_t failed_here = 0;
};

class PreparedRun {
 public:
  struct State;  // sim/prepared_run.cc
  explicit PreparedRun(std::unique_ptr<State> st);
  ~PreparedRun();
  const SimConfig& config() const;
  // The scenario's workload as the pools read it.
  const RequestSource& requests() const;
  StepPricer& pricer();
  // What the run was prepared from (the PD link plans the KV transfer with them).
  const models::ModelCard& card() const;
  const hw::HardwareProfile& profile() const;
  const models::ParallelLayout& layout() const;
  // The model as one GPU of the pool runs it, the cost model pricing it,
  // and whether its all-reduces run NVLS (sim/step_explain.h reads them).
  const models::ShardedModel& sharded() const;
  const CostModel& cost() const;
  bool nvls() const;
  // GPUs of every replica of the pool.
  int gpus() const;

  // The pool's part of the summary. `linked`: one of several pools (it then
  // reports its pages, utilization over `sim`'s span and its own requests,
  // and leaves out what only the run as a whole shows).
  schema::PoolSummary SummarizePool(const SimResult& sim, const PoolTally& tally,
                                    bool linked) const;
  // One track per replica with `sim`'s iterations (SimConfig::want_trace).
  nlohmann::json ReplicaTrace(const SimResult& sim) const;

 private:
  void AddDeployment(schema::PoolSummary* p) const;
  void AddMemory(schema::PoolSummary* p) const;
  void AddTimeShares(const SimResult& sim, schema::PoolSummary* p) const;
  void AddPrefixCache(const SimResult& sim, schema::PoolSummary* p) const;
  void AddSpeculative(const SimResult& sim, schema::PoolSummary* p) const;
  void AddPower(const SimResult& sim, schema::PoolSummary* p) const;
  void AddLinkedPool(const SimResult& sim, const PoolTally& tally, schema::PoolSummary* p) const;
  std::vector<std::string> Warnings(const SimResult& sim, int64_t failed) const;

  std::unique_ptr<State> st_;
};

// `scenario` must outlive the result. Errors name the scenario file and the
// JSON path, as RunScenario's do.
// Pool `pool` of the scenario (an index into Scenario::pools).
Result<std::unique_ptr<PreparedRun>> PrepareRun(const Scenario& scenario, size_t pool,
                                                const RunOptions& options);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_PREPARED_RUN_H_
