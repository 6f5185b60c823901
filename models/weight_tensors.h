// The weight tensors of a model card with their shapes and how a parallel
// layout shards them. Shared by the weight accounting (memory) and the step
// operator list (ops), so both agree on every shape.
#ifndef CAPPLAN_MODELS_WEIGHT_TENSORS_H_
#define CAPPLAN_MODELS_WEIGHT_TENSORS_H_

#include <cstdint>
#include <vector>

#include "models/card.h"
#include "models/types.h"

namespace capplan::models {

// How one tensor is split across the GPUs of an instance (SGLang's layer
// classes for DeepSeek-style and Llama-style models).
enum class ShardKind {
  kReplicated,     // every GPU holds it (ReplicatedLinear, norms, gates)
  kAttnColumn,     // output dim split over attention TP (q_b, kv_b, q_proj)
  kAttnRow,        // input dim split over attention TP (o_proj)
  kKvHeads,        // GQA k/v: max(1, kv_heads / attn_tp) heads per rank
  kTpColumn,       // output dim split over TP (FFN gate/up)
  kTpRow,          // input dim split over TP (FFN down)
  kExpertColumn,   // routed experts: count split over EP, output over TP/EP
  kExpertRow,      // routed experts: count split over EP, input over TP/EP
  kVocabAttnTp,    // embedding rows split over attention TP
  kVocabTp,        // LM head rows split over TP
};

// The names of the tensors no op is named after (a tensor an op is named
// after is spelt by its op id, models/op_ids.h).
namespace tensor_names {
inline constexpr char kQALayernorm[] = "attn.q_a_layernorm";
inline constexpr char kKvALayernorm[] = "attn.kv_a_layernorm";
inline constexpr char kKvBProj[] = "attn.kv_b_proj";
inline constexpr char kLinearDtBiasALog[] = "linear_attn.dt_bias_a_log";
inline constexpr char kLinearNorm[] = "linear_attn.norm";
inline constexpr char kExpertsGateUpProj[] = "moe.experts.gate_up_proj";
inline constexpr char kExpertsDownProj[] = "moe.experts.down_proj";
}  // namespace tensor_names

struct WeightTensor {
  Component component;
  const char* name;
  int64_t n = 0;      // output features (rows)
  int64_t k = 0;      // input features (cols; INT4 groups run along k)
  int64_t count = 0;  // instances in the whole model (layers x experts)
  ShardKind shard = ShardKind::kReplicated;
  bool is_norm_vector = false;  // 1-D weights (norms, biases): never quantized
};

// Every weight tensor of the served model (MTP layers excluded).
std::vector<WeightTensor> ListWeightTensors(const ModelCard& card);

// A tensor's local shape on one GPU.
struct LocalShape {
  int64_t n = 0, k = 0, count = 0;
};
LocalShape ShardTensor(const ModelCard& card, const WeightTensor& t, const ParallelLayout& layout);

struct DtypeFacts;
// Scale (and zero-point) bytes of one n x k tensor stored as `f`: FP8 blocks
// ceil(n/br) x ceil(k/bc), INT4 n x ceil(k/group), per-tensor FP8 one scale.
int64_t TensorScaleBytes(const DtypeFacts& facts, const WeightFormat& f, int64_t n, int64_t k);

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_WEIGHT_TENSORS_H_
