// The pools an engine gives a model whose layers are not all alike: the
// linear-attention layers' per-sequence state and the window-limited
// layers' KV, beside the full-attention KV, per the engine's
// HybridPoolRule (models/engines/<engine>.json memory.hybrid_pools).
#ifndef CAPPLAN_MODELS_HYBRID_POOLS_H_
#define CAPPLAN_MODELS_HYBRID_POOLS_H_

#include <cstdint>

#include "common/status.h"
#include "models/card.h"
#include "models/engine_profile.h"
#include "models/memory.h"
#include "models/ops.h"
#include "models/types.h"

namespace capplan::models {

// Whether `rule` sizes this card's pools apart from per-token KV (a linear
// or window-limited layer the rule treats differently from a full one).
bool UsesHybridPools(const ModelCard& card, const HybridPoolRule& rule);

// The one-rank state of every linear layer of one sequence as the engine
// stores it (conv state over conv_kernel - 1 steps, recurrent state
// value_heads x key_head_dim x value_head_dim, heads split over attention TP).
int64_t LinearStateBytes(const ModelCard& card, const ParallelLayout& layout,
                         const HybridPoolRule& rule, int layers);

// The bytes per element of the linear layers' recurrent and conv state as
// `rule` says the engine keeps them ("model": the checkpoint's 16-bit dtype).
LinearStateFormat LinearStateFormatOf(const HybridPoolRule& rule);

struct HybridPoolInputs {
  const ModelCard* card = nullptr;
  const ParallelLayout* layout = nullptr;
  const KvLayout* kv = nullptr;  // full-attention layers' KV (ComputeKvLayout)
  const HybridPoolRule* rule = nullptr;
  int64_t page = 1;             // the engine's page or block size, tokens
  int64_t reserved_blocks = 0;  // vLLM's null block
  int64_t context_tokens = 1;   // the request length asked about
};

// One rank's pools out of `kv_room` bytes: HybridPools plus the full-
// attention KV tokens and the bytes of every pool. Invalid-config error
// when the engine version serves no such model.
struct HybridPoolPlan {
  HybridPools pools;
  int64_t kv_tokens_per_rank = 0;
  int64_t kv_pool_bytes = 0;     // the KV pool (vLLM: the whole shared block pool)
  int64_t state_pool_bytes = 0;  // SGLang's separate state pool
};
Result<HybridPoolPlan> PlanHybridPools(const HybridPoolInputs& in, double kv_room);

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_HYBRID_POOLS_H_
