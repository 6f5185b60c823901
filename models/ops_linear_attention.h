// The state ops of a hybrid model's Gated DeltaNet layers (Qwen3-Next) in
// one forward step on one GPU: the causal depthwise conv over q/k/v with its
// per-sequence conv state, and the delta-rule scan -- chunked over the
// prompt for prefill, one recurrent update per token for decode -- reading
// and writing the per-sequence recurrent state. The layer program lists them
// (layer_program_linear.cc, LinearStateOp); ops_linear_attention.cc holds
// their FLOP and byte formulas, the one place they are written.
#ifndef CAPPLAN_MODELS_OPS_LINEAR_ATTENTION_H_
#define CAPPLAN_MODELS_OPS_LINEAR_ATTENTION_H_

#include <cstdint>

namespace capplan::models {

// Chunk length of the chunked delta-rule prefill kernel (flash-linear-
// attention chunk_gated_delta_rule, BT = 64), which SGLang and vLLM run
// for Gated DeltaNet prefill.
inline constexpr int64_t kDeltaRuleChunk = 64;

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_OPS_LINEAR_ATTENTION_H_
