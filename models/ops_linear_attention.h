// The ops of a hybrid model's Gated DeltaNet layers in one forward step on
// one GPU (Qwen3-Next): the input projections, the causal depthwise conv
// over q/k/v with its per-sequence conv state, the delta-rule scan --
// chunked over the prompt for prefill, one recurrent update per token for
// decode -- reading and writing the per-sequence recurrent state, the gated
// RMSNorm and the output projection. Each op carries FLOPs and HBM bytes.
#ifndef CAPPLAN_MODELS_OPS_LINEAR_ATTENTION_H_
#define CAPPLAN_MODELS_OPS_LINEAR_ATTENTION_H_

#include <cstdint>
#include <vector>

#include "models/ops.h"

namespace capplan::models {

// Chunk length of the chunked delta-rule prefill kernel (flash-linear-
// attention chunk_gated_delta_rule, BT = 64), which SGLang and vLLM run
// for Gated DeltaNet prefill.
inline constexpr int64_t kDeltaRuleChunk = 64;

// Bytes one element of the recurrent (SSM) state takes as the engine keeps
// it (fp32 in SGLang's default, the model's 16-bit dtype in vLLM's).
struct LinearStateFormat {
  int64_t ssm_bytes = 4;
  int64_t conv_bytes = 2;
};

// Appends the linear-attention ops of `batch` on this GPU to *out (count =
// the card's linear layers); nothing for a model without them.
void AppendLinearAttentionOps(const ShardedModel& m, const BatchShape& batch,
                              const LinearStateFormat& state, std::vector<Op>* out);

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_OPS_LINEAR_ATTENTION_H_
