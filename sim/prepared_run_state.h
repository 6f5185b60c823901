// PreparedRun's state, shared by prepared_run.cc (preparing a pool) and
// prepared_run_summary.cc (its part of the summary); not a public header.
#ifndef CAPPLAN_SIM_PREPARED_RUN_STATE_H_
#define CAPPLAN_SIM_PREPARED_RUN_STATE_H_

#include <memory>
#include <optional>
#include <string>

#include "models/memory.h"
#include "sim/cost_model.h"
#include "sim/prepared_run.h"
#include "sim/scenario.h"

namespace capplan::sim {

// The scenario's workload, read in place: a run holds one copy of its
// requests however many pools read them.
class WorkloadSource : public RequestSource {
 public:
  explicit WorkloadSource(const Workload* w) : w_(w) {}
  int64_t size() const override { return static_cast<int64_t>(w_->requests.size()); }
  SimRequestSpec At(int32_t idx) const override {
    const size_t i = static_cast<size_t>(idx);
    const RequestSpec& r = w_->requests[i];
    SimRequestSpec s{r.id, r.arrival_ns, r.input_tokens, r.output_tokens,
                     idx < w_->warmup_requests};
    if (i < w_->after.size()) {
      s.after = w_->after[i];
      s.think_ns = w_->think_ns[i];
    }
    return s;
  }

 private:
  const Workload* w_;
};

struct PreparedRun::State {
  const Scenario* sc = nullptr;
  const PoolSpec* pool = nullptr;
  size_t pool_index = 0;
  RunOptions options;
  models::ModelCard card;
  hw::HardwareProfile profile;
  models::ParallelLayout layout;
  models::PrecisionChoice choice;
  std::optional<models::ShardedModel> sharded;
  std::optional<models::ShardedModel> draft;  // speculative decoding's draft model
  std::optional<models::MemoryPlan> plan;
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<ModelStepPricer> pricer;
  int64_t cgbs = 0;
  bool overlap = false;
  int64_t mrr = 0;
  SimConfig cfg;
  std::optional<WorkloadSource> requests;

  const DeploymentSpec& deployment() const { return pool->deployment; }
  // `status` as an error at `pointer` of the scenario file.
  Status At(const std::string& pointer, const Status& status) const {
    return status.WithPrefix(sc->origin + ": " + pointer);
  }
};

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_PREPARED_RUN_STATE_H_
