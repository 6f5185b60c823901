#include "sim/sweep/shard.h"

#include <cstdlib>

namespace capplan::sim::sweep {

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
}

namespace {

Result<int> ParseNonNegative(const std::string& name, const std::string& text) {
  size_t used = 0;
  long v = -1;
  try {
    v = std::stol(text, &used);
  } catch (...) {
    used = 0;
  }
  if (used != text.size() || v < 0 || v > 1000000000) {
    return Status::Usage(name + "='" + EchoValue(text) + "': expected a non-negative integer");
  }
  return static_cast<int>(v);
}

}  // namespace

Result<ShardSpec> ResolveShard(std::optional<int> flag_index, std::optional<int> flag_count,
                               const EnvLookup& env) {
  ShardSpec s;
  std::optional<int> index = flag_index;
  std::optional<int> count = flag_count;
  if (index || count) s.source = "flags";
  if (!index) {
    if (auto id = env("SLURM_ARRAY_TASK_ID")) {
      CAPPLAN_ASSIGN_OR_RETURN(int v, ParseNonNegative("SLURM_ARRAY_TASK_ID", *id));
      if (auto min = env("SLURM_ARRAY_TASK_MIN")) {
        CAPPLAN_ASSIGN_OR_RETURN(int m, ParseNonNegative("SLURM_ARRAY_TASK_MIN", *min));
        v -= m;
      }
      index = v;
      s.source = "slurm";
      if (!count) {
        if (auto c = env("SLURM_ARRAY_TASK_COUNT")) {
          CAPPLAN_ASSIGN_OR_RETURN(count, ParseNonNegative("SLURM_ARRAY_TASK_COUNT", *c));
        }
      }
    } else if (auto k = env("JOB_COMPLETION_INDEX")) {
      CAPPLAN_ASSIGN_OR_RETURN(index, ParseNonNegative("JOB_COMPLETION_INDEX", *k));
      s.source = "kubernetes";
    }
  }
  if (index && !count) {
    if (auto c = env("CAPPLAN_SHARD_COUNT")) {
      CAPPLAN_ASSIGN_OR_RETURN(count, ParseNonNegative("CAPPLAN_SHARD_COUNT", *c));
    }
  }
  if (!index && !count) return s;  // one process does every point
  if (!count) {
    return Status::Usage("shard index " + std::to_string(*index) + " (from " + s.source +
                         ") without a shard count; pass --shard-count N");
  }
  if (!index) index = 0;
  if (*count < 1) return Status::Usage("--shard-count: must be >= 1, got " + std::to_string(*count));
  if (*index < 0 || *index >= *count) {
    return Status::Usage("--shard-index " + std::to_string(*index) + " (from " + s.source +
                         "): must be in [0, " + std::to_string(*count) + ")");
  }
  s.index = *index;
  s.count = *count;
  return s;
}

}  // namespace capplan::sim::sweep
