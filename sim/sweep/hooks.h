// What a sweep or a search needs from the simulator, as plain functions, so
// the expansion, resume, sharding and search logic can be tested with a fake
// and wired to sim/simulate.h (sim/sweep/sim_hooks.h) in the binary.
#ifndef CAPPLAN_SIM_SWEEP_HOOKS_H_
#define CAPPLAN_SIM_SWEEP_HOOKS_H_

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/status.h"
#include "schema/run_summary.h"

namespace capplan::sim::sweep {

// Parses a scenario document without running it. Usage errors mean the
// document is malformed (unknown key, wrong type); Invalid errors mean it is
// well-formed but describes a configuration that cannot work.
using PointValidator = std::function<Status(const nlohmann::json& scenario_doc)>;
// Runs one simulation and returns its summary. Must be thread-safe and
// deterministic.
using PointRunner = std::function<Result<schema::RunSummary>(const nlohmann::json& scenario_doc)>;

// Cheap checks before simulating (search only): weights fit, KV holds the
// concurrency. `reason` set means the point is dropped without simulating.
struct PruneVerdict {
  std::optional<std::string> reason;
  std::optional<int> gpus;  // total GPUs the point uses, when known
};
using PointPruner = std::function<Result<PruneVerdict>(const nlohmann::json& scenario_doc)>;

struct SimHooks {
  PointValidator validate;
  PointRunner run;
  PointPruner prune;  // may be empty: nothing pruned before simulating
};

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_HOOKS_H_
