// Helpers shared by ops.cc and ops_attention.cc (not a public header).
#ifndef CAPPLAN_MODELS_OPS_INTERNAL_H_
#define CAPPLAN_MODELS_OPS_INTERNAL_H_

#include <vector>

#include "models/dtype_facts.h"
#include "models/ops.h"

namespace capplan::models {

// Activations move as BF16 between kernels (facts: hw/formats.json bf16).
struct OpBuildContext {
  const ShardedModel* m;
  const DtypeFacts* facts;
  int64_t act_bytes;  // bytes per activation element (bf16)
  int64_t attn_tokens;
  std::vector<Op>* out;
};

// Number of (query, key) pairs of a causal prefill chunk of `n` new tokens
// after `cached` cached ones, each query seeing at most `cap` keys (cap <= 0:
// no cap). Query i (1-based) sees cached + i keys.
double CausalPairs(int64_t cached, int64_t n, int64_t cap);

// True when the engine runs this batch's MLA prefill in the absorbed form:
// it names an mla_prefill_absorbed kernel (models/kernel_choice.h) and a
// chunk of the batch has a cached prefix (SGLang's Triton MLA backend runs
// a batch as MHA only when no request in it has one).
bool AbsorbedMlaPrefill(const ShardedModel& m, const BatchShape& batch);

// Appends the attention block of one layer type (MLA or GQA), excluding the
// projections before/after it, with `count` = layers.
void AppendAttentionOps(const OpBuildContext& c, const BatchShape& batch);

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_OPS_INTERNAL_H_
