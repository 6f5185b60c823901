// `capplan simulate --explain-step`: one decode step and one prefill step of
// a scenario's pool, op by op -- the kernel implementation or class that
// priced each op, its shape, bytes, FLOPs, time, what bound it and where its
// efficiency came from -- so a reader can check a prediction against the
// kernels the engine really runs.
#ifndef CAPPLAN_SIM_STEP_EXPLAIN_H_
#define CAPPLAN_SIM_STEP_EXPLAIN_H_

#include <cstdint>
#include <string>

#include "common/status.h"
#include "sim/scenario.h"

namespace capplan::sim {

struct ExplainOptions {
  // 0: from the workload (decode: its concurrency, or 1; context: mean
  // input + half the mean output; prefill: the mean input, up to the chunk).
  int64_t decode_batch = 0;
  int64_t decode_context = 0;
  int64_t prefill_tokens = 0;
  int64_t prefill_cached = 0;  // tokens already cached before the chunk
};

// The two steps of every pool of `scenario`, as a text table per step.
Result<std::string> ExplainSteps(const Scenario& scenario, const ExplainOptions& options);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_STEP_EXPLAIN_H_
