// Two micro-batches overlapped (SGLang --enable-two-batch-overlap, vLLM
// --enable-dbo), as models::MicroBatchOverlapRule describes the engine
// version: a step whose tokens reach the version's threshold runs as two
// micro-batches, each priced at its own size (its GEMMs see half the rows:
// what the overlap costs in batch size), and the MoE all-to-all of one runs
// under the other's compute.
//
// The rule (OverlappedSeconds): both engines alternate the two micro-batches
// layer by layer on one compute stream and one communication stream (SGLang
// two_batch_overlap.py _execute_two_batch_raw runs micro-batch a one stage
// ahead, then a and b stage by stage; vLLM docs/design/dbo.md: Comp
// |A0_0 A1_0|MLP_1|S_1 MLP_0|S_0 A0_1 A1_1| against Comm |D_1|D_0|C_1|C_0|).
// Each stream runs its work back to back, so the step takes at least
// compute_a + compute_b and at least all_to_all_a + all_to_all_b; and one
// micro-batch's own compute and all-to-all depend on each other (a dispatch
// waits for the attention before it, the experts for the dispatch), so it
// takes at least compute_x + all_to_all_x for either micro-batch, which is
// the pipeline's fill and drain. The step's GPU time is the largest of the
// four. Communication other than the all-to-all (TP all-reduces) stays on
// the compute stream's critical path; compute outside the MoE layers counts
// as compute that may hide an all-to-all.
#ifndef CAPPLAN_SIM_MICRO_BATCH_OVERLAP_H_
#define CAPPLAN_SIM_MICRO_BATCH_OVERLAP_H_

#include <cstdint>
#include <string>

#include "common/json_util.h"
#include "common/status.h"
#include "models/engine_profile.h"
#include "models/types.h"
#include "sim/cost_model.h"
#include "sim/step_pricer.h"

namespace capplan::sim {

// Reads d's optional bool "two_batch_overlap" for a deployment of `release`
// ("sglang 0.5.4"). One-line errors when the version has no overlap in its
// profile, or the deployment lacks what it needs (ep > 1 and the DeepEP
// all-to-all where the version requires it).
Status ParseTwoBatchOverlap(JsonObject& d, const models::EngineProfile& engine,
                            const std::string& release, int ep, models::MoeAllToAll all_to_all,
                            bool* out);

// Splits `work` in two micro-batches as both engines do: decode rows
// (decode_query_tokens each) first, then prefill chunks, cut at half the
// step's tokens (the first micro-batch takes floor(T/2)); a prefill chunk
// straddling the cut is split there, its second part attending to the
// first. False (no split) when the step is below the threshold for its kind
// (decode only, or holding a prefill chunk) or a half would be empty.
bool SplitForOverlap(const StepWork& work, int64_t decode_query_tokens, int64_t decode_threshold,
                     int64_t prefill_threshold, StepWork* a, StepWork* b);

// One micro-batch's GPU seconds: its kernels but the all-to-all, and its
// all-to-all (dispatch and combine, every MoE layer).
struct MicroBatchSeconds {
  double compute = 0;
  double all_to_all = 0;
};

// The step's GPU seconds by the rule in the header comment.
double OverlappedSeconds(const MicroBatchSeconds& a, const MicroBatchSeconds& b);

// The step of two micro-batches priced `a` and `b` (each by PriceOps, whose
// all-to-all took a2a_a and a2a_b seconds): their kernels' seconds summed,
// the hidden all-to-all taken out of the communication class, bound and
// collective provenance into overlap_hidden_seconds, both micro-batches'
// launches, and the host side priced once for the whole step (`whole`).
StepCost CombineMicroBatches(const StepCost& a, double a2a_a, const StepCost& b, double a2a_b,
                             const StepContext& whole);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_MICRO_BATCH_OVERLAP_H_
