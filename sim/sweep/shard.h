// Which points of a sweep this process runs: every n-th point, offset i.
// Batch systems give the index in the environment so one script line serves
// every task (Slurm job arrays, Kubernetes Indexed Jobs).
#ifndef CAPPLAN_SIM_SWEEP_SHARD_H_
#define CAPPLAN_SIM_SWEEP_SHARD_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/status.h"

namespace capplan::sim::sweep {

struct ShardSpec {
  int index = 0;
  int count = 1;
  std::string source = "default";  // "flags", "slurm", "kubernetes": said in messages
  bool Owns(int64_t point_index) const { return point_index % count == index; }
};

// Returns the value of an environment variable, or nullopt.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup ProcessEnv();

// Flags win over the environment. Without flags: SLURM_ARRAY_TASK_ID minus
// SLURM_ARRAY_TASK_MIN (arrays may start at 1) with SLURM_ARRAY_TASK_COUNT;
// else JOB_COMPLETION_INDEX, whose count Kubernetes does not export, so
// --shard-count (or CAPPLAN_SHARD_COUNT, set in the Job manifest) is needed.
// Usage errors for index outside [0, count) or a missing count.
Result<ShardSpec> ResolveShard(std::optional<int> flag_index, std::optional<int> flag_count,
                               const EnvLookup& env);

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_SHARD_H_
