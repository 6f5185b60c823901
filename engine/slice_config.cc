#include "engine/slice_config.h"

#include <algorithm>

#include "models/memory.h"

namespace capplan::engine {
namespace {

using kernels::GemmWeightFormat;

GemmWeightFormat ToGemmFormat(const models::WeightFormat& f) {
  switch (models::DtypeFamily(f.dtype)) {
    case models::Dtype::kFp8E4m3:
      // Always block-scaled in the engine: its activations get one scale per
      // token per 128 K (DeepGEMM's 1x128, deepseek-ai/DeepGEMM README.md), so a request's
      // output does not depend on which other requests share the batch. A
      // per-tensor dynamic activation scale would couple them.
      return GemmWeightFormat::kFp8Block128;
    case models::Dtype::kInt4:
      return GemmWeightFormat::kInt4;
    default:
      return GemmWeightFormat::kBf16;
  }
}

// Small-dim widths: the smallest shapes that keep every code path honest
// (INT4 group 32 divides every K, MLA latent spans one FP8 scale block, the
// DSA top-k is below typical test contexts so the selection really drops
// tokens). They are test dims, not facts about any model.
constexpr int kSmallHidden = 64;
constexpr int kSmallVocab = 512;
constexpr int kSmallQHeads = 4;
constexpr int kSmallKvHeads = 2;
constexpr int kSmallHeadDim = 16;
constexpr int kSmallQLora = 32;
constexpr int kSmallKvLora = 32;
constexpr int kSmallNope = 16;
constexpr int kSmallRope = 8;
constexpr int kSmallVHead = 16;
constexpr int kSmallIndexHeads = 2;
constexpr int kSmallIndexDim = 16;
constexpr int kSmallIndexTopk = 24;
constexpr int kSmallDenseInter = 96;
constexpr int kSmallExperts = 8;
constexpr int kSmallTopK = 2;
constexpr int kSmallMoeInter = 32;

}  // namespace

int SliceConfig::KvEntryWidth() const {
  if (attention == models::AttentionKind::kGqa) return 2 * kv_heads * head_dim;
  return kv_lora_rank + qk_rope + (index_topk > 0 ? index_head_dim : 0);
}

std::string SliceConfig::Describe() const {
  return model + " tp" + std::to_string(tp) + " " + std::to_string(layers) + " layer(s), " + dims +
         " dims, experts " + kernels::GemmWeightFormatName(experts_format) + ", attention " +
         kernels::GemmWeightFormatName(attention_format) + ", kv " + models::DtypeName(kv_dtype);
}

Result<SliceConfig> MakeSliceConfig(const models::ModelCard& card, int tp, int layers,
                                    const std::string& dims, const models::PrecisionChoice& choice,
                                    uint64_t seed) {
  if (dims != "small" && dims != "full") {
    return Status::Usage("--cpu-dims: must be small or full, got '" + dims + "'");
  }
  if (tp < 1 || card.num_heads % tp != 0) {
    return Status::Invalid("tp " + std::to_string(tp) + " does not divide " + card.name + "'s " +
                           std::to_string(card.num_heads) + " attention heads");
  }
  if (layers < 1 || layers > card.num_layers) {
    return Status::Usage("--layers: must be in [1, " + std::to_string(card.num_layers) +
                         "] for " + card.name + ", got " + std::to_string(layers));
  }
  if (choice.kv_cache != models::Dtype::kBf16 && choice.kv_cache != models::Dtype::kFp8E4m3) {
    return Status::Usage("kv_cache: the engine stores bf16 or fp8 KV, got " +
                         std::string(models::DtypeName(choice.kv_cache)));
  }
  CAPPLAN_ASSIGN_OR_RETURN(auto formats, models::ResolveWeightFormats(card, choice));
  // The engine's GEMMs exist for 16-bit, FP8 and W4A16 INT4 weights only
  // (kernels::GemmWeightFormat); any other table row would run as BF16.
  for (const auto& [c, f] : formats) {
    const hw::NumberFormat& row = hw::Formats().Row(f.dtype);
    const hw::NumberFormat& base = hw::Formats().Row(row.family);
    const bool has_kernel = row.family == models::Dtype::kFp8E4m3 ||
                            row.family == models::Dtype::kInt4 || row.bits >= 16;
    if (!has_kernel || row.activations != base.activations) {
      return Status::Usage(std::string("weights: ") + models::ComponentName(c) + " in " +
                           row.name + ": the reference engine has GEMM kernels for bf16, fp8 "
                           "and int4 (W4A16) weights only");
    }
  }
  SliceConfig s;
  s.model = card.name;
  s.dims = dims;
  s.tp = tp;
  s.layers = layers;
  s.attention = card.attention;
  // Keep at most one of the card's leading dense layers: MoE layers are
  // what both motivating models are made of (Kimi K2.6 1 dense of 61, GLM-5.2
  // 3 of 78: first_k_dense_replace in their config.json), so a 2-layer slice
  // is one dense + one MoE layer and a 1-layer slice is one MoE layer.
  s.first_k_dense = card.IsMoe() ? std::min(card.first_k_dense, layers > 1 ? 1 : 0) : 0;
  s.scoring = card.scoring_func;
  s.routed_scaling = card.routed_scaling_factor;
  s.kv_dtype = choice.kv_cache;
  s.seed = seed;
  auto fmt = [&](models::Component c) {
    auto it = formats.find(c);
    return it == formats.end() ? GemmWeightFormat::kBf16 : ToGemmFormat(it->second);
  };
  s.attention_format = fmt(models::Component::kAttention);
  s.experts_format = fmt(models::Component::kExperts);
  s.shared_format = fmt(models::Component::kSharedExperts);
  s.dense_ffn_format = fmt(models::Component::kDenseFfn);
  for (const auto& [c, f] : formats) {
    if (models::DtypeFamily(f.dtype) == models::Dtype::kInt4 && f.group_size > 0) {
      s.int4_group = f.group_size;
    }
  }
  const bool dsa = card.index_topk > 0;
  if (dims == "full") {
    s.hidden = card.hidden_size;
    s.vocab = card.vocab_size / tp;  // vocab-parallel LM head
    s.q_heads = card.num_heads / tp;
    s.kv_heads = std::max(1, card.num_kv_heads / tp);
    s.head_dim = card.head_dim;
    s.q_lora_rank = card.q_lora_rank;
    s.kv_lora_rank = card.kv_lora_rank;
    s.qk_nope = card.qk_nope_head_dim;
    s.qk_rope = card.qk_rope_head_dim;
    s.v_head_dim = card.v_head_dim;
    s.index_heads = card.index_n_heads;
    s.index_head_dim = card.index_head_dim;
    s.index_topk = card.index_topk;
    s.dense_intermediate = card.intermediate_size / tp;
    s.n_experts = card.n_routed_experts;
    s.top_k = card.experts_per_token;
    s.n_shared = card.n_shared_experts;
    s.moe_intermediate = card.moe_intermediate_size / tp;  // TP-sharded experts
  } else {
    s.hidden = kSmallHidden;
    s.vocab = kSmallVocab;
    s.q_heads = kSmallQHeads;
    s.kv_heads = std::min(kSmallKvHeads, std::max(1, card.num_kv_heads / tp));
    s.head_dim = kSmallHeadDim;
    s.q_lora_rank = card.q_lora_rank > 0 ? kSmallQLora : 0;
    s.kv_lora_rank = kSmallKvLora;
    s.qk_nope = kSmallNope;
    s.qk_rope = kSmallRope;
    s.v_head_dim = kSmallVHead;
    s.index_heads = dsa ? kSmallIndexHeads : 0;
    s.index_head_dim = dsa ? kSmallIndexDim : 0;
    s.index_topk = dsa ? kSmallIndexTopk : 0;
    s.dense_intermediate = kSmallDenseInter;
    s.n_experts = card.IsMoe() ? kSmallExperts : 0;
    s.top_k = card.IsMoe() ? std::min(kSmallTopK, card.experts_per_token) : 0;
    s.n_shared = std::min(card.n_shared_experts, 1);
    s.moe_intermediate = kSmallMoeInter;
    // INT4 groups larger than the small K would not divide it.
    s.int4_group = std::min(s.int4_group, 32);
  }
  if (!dsa) s.index_topk = 0;
  // Kept at small dims too: sharing is architecture, not width.
  s.index_share_every = dsa && card.index_share_every > 0 ? card.index_share_every : 1;
  return s;
}

}  // namespace capplan::engine
