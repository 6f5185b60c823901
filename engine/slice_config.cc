#include "engine/slice_config.h"

#include <algorithm>
#include <memory>
#include <string_view>

#include "engine/slice_weights.h"
#include "models/layer_program.h"
#include "models/memory.h"

namespace capplan::engine {

namespace op_ids = models::op_ids;
namespace {

using kernels::GemmWeightFormat;

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
// Gated DeltaNet: two value heads per key head, as Qwen3-Next has (16 key,
// 32 value heads); a window below the test contexts so it really drops keys.
constexpr int kSmallLinearKeyHeads = 1;
constexpr int kSmallLinearValueHeads = 2;
constexpr int kSmallLinearHeadDim = 16;
constexpr int kSmallWindow = 8;

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

namespace {

Status CheckSliceArgs(const models::ModelCard& card, int tp, int layers, const std::string& dims,
                      const models::PrecisionChoice& choice) {
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
  // The engine's GEMMs exist for 16-bit, FP8 and W4A16 INT4 weights only
  // (kernels::GemmWeightFormat); any other table row would run as BF16.
  CAPPLAN_ASSIGN_OR_RETURN(auto formats, models::ResolveWeightFormats(card, choice));
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
  return Status::Ok();
}

// Small dims: the card's architecture at the small widths, every per-rank
// width times tp so sharding over tp gives the small width on the rank.
void Shrink(int tp, models::ModelCard* c) {
  const bool dsa = c->index_topk > 0;
  c->hidden_size = kSmallHidden;
  c->vocab_size = kSmallVocab * tp;
  c->num_heads = kSmallQHeads * tp;
  // KV heads per rank: at most kSmallKvHeads; a card with fewer KV heads
  // than ranks keeps them (replicated, one per rank).
  if (c->num_kv_heads >= tp) {
    c->num_kv_heads = std::min(kSmallKvHeads, c->num_kv_heads / tp) * tp;
  }
  c->head_dim = kSmallHeadDim;
  c->q_lora_rank = c->q_lora_rank > 0 ? kSmallQLora : 0;
  c->kv_lora_rank = kSmallKvLora;
  c->qk_nope_head_dim = kSmallNope;
  c->qk_rope_head_dim = kSmallRope;
  c->v_head_dim = kSmallVHead;
  c->index_n_heads = dsa ? kSmallIndexHeads : 0;
  c->index_head_dim = dsa ? kSmallIndexDim : 0;
  c->index_topk = dsa ? kSmallIndexTopk : 0;
  c->intermediate_size = kSmallDenseInter * tp;
  if (c->IsMoe()) {
    c->n_routed_experts = kSmallExperts;
    c->experts_per_token = std::min(kSmallTopK, c->experts_per_token);
  }
  c->n_shared_experts = std::min(c->n_shared_experts, 1);
  c->moe_intermediate_size = kSmallMoeInter * tp;
  if (c->IsHybridLinear()) {
    models::LinearAttention& la = c->linear_attention;
    la.num_key_heads = kSmallLinearKeyHeads * tp;
    la.num_value_heads = kSmallLinearValueHeads * tp;
    la.key_head_dim = la.value_head_dim = kSmallLinearHeadDim;
  }
  if (c->sliding_window_layers > 0) c->sliding_window = std::min(c->sliding_window, kSmallWindow);
}

// A slice of a card whose layers are not all alike keeps the mixers of its
// first `layers` layers: its counts are theirs.
void SliceMixers(const models::ModelCard& card, int layers, models::ModelCard* c) {
  if (!card.HasMixedLayers()) return;
  int linear = 0, window = 0;
  for (int l = 0; l < layers; ++l) {
    linear += card.MixerOf(l) == models::LayerMixer::kLinear ? 1 : 0;
    window += card.MixerOf(l) == models::LayerMixer::kWindow ? 1 : 0;
  }
  c->linear_attention.layers = linear;
  c->sliding_window_layers = window;
}

// The card the slice runs: `layers` of it, keeping at most one of its
// leading dense layers (MoE layers are what both motivating models are made
// of: Kimi K2.6 1 dense of 61, GLM-5.2 3 of 78, first_k_dense_replace in
// their config.json), so a 2-layer slice is one dense + one MoE layer and a
// 1-layer slice is one MoE layer; shrunk at small dims.
models::ModelCard SliceCard(const models::ModelCard& card, int tp, int layers,
                            const std::string& dims) {
  models::ModelCard c = card;
  c.num_layers = layers;
  c.first_k_dense = card.IsMoe() ? std::min(card.first_k_dense, layers > 1 ? 1 : 0) : 0;
  c.mtp_layers = 0;
  SliceMixers(card, layers, &c);
  if (dims == "small") Shrink(tp, &c);
  return c;
}

// One TP rank of the slice card, with the program the backends execute.
Result<std::shared_ptr<const models::ShardedModel>> ShardSlice(
    const models::ModelCard& card, int tp, const std::string& dims,
    const models::PrecisionChoice& choice) {
  models::ParallelLayout layout;
  layout.gpus = tp;
  layout.tp = tp;
  CAPPLAN_ASSIGN_OR_RETURN(models::ShardedModel m, models::ShardModel(card, layout, choice));
  // The reference engine runs MLA prefill absorbed, whatever the batch.
  m.mla_prefill_always_absorbed = true;
  if (dims == "small") {
    // INT4 groups larger than the small K would not divide it.
    for (auto& [c, f] : m.formats) {
      if (models::DtypeFamily(f.dtype) == models::Dtype::kInt4) {
        f.group_size = std::min(f.group_size, 32);
      }
    }
    CAPPLAN_ASSIGN_OR_RETURN(models::LayerProgram p, models::BuildLayerProgram(m));
    m.program = std::make_shared<const models::LayerProgram>(std::move(p));
  }
  return std::make_shared<const models::ShardedModel>(std::move(m));
}

const models::ProgramOp* FindOp(const models::LayerProgram& p, std::string_view id) {
  for (const auto* ops : {&p.prologue, &p.layer_ops, &p.epilogue}) {
    for (const models::ProgramOp& op : *ops) {
      if (op.id == id) return &op;
    }
  }
  return nullptr;
}

// The slice's per-rank widths, read from its program (the card's where the
// slice has no op of that kind).
void ReadWidths(const models::ShardedModel& m, SliceConfig* s) {
  const models::ModelCard& card = m.card;
  const models::LayerProgram& p = *m.program;
  const int tp = s->tp;
  s->hidden = static_cast<int>(p.hidden);
  s->vocab = static_cast<int>(FindOp(p, op_ids::kLmHead)->n);
  const models::ProgramOp* attn = FindOp(
      p, card.attention == models::AttentionKind::kMla ? op_ids::kMlaDecode : op_ids::kDecode);
  s->q_heads = attn->heads;
  s->kv_heads = std::max(1, card.num_kv_heads / tp);
  s->head_dim = card.head_dim;
  s->q_lora_rank = card.q_lora_rank;
  s->kv_lora_rank = card.kv_lora_rank;
  s->qk_nope = card.qk_nope_head_dim;
  s->qk_rope = card.qk_rope_head_dim;
  s->v_head_dim = card.v_head_dim;
  s->index_heads = card.index_n_heads;
  s->index_head_dim = card.index_head_dim;
  s->index_topk = card.index_topk;
  const models::ProgramOp* dense = FindOp(p, op_ids::kDenseDownProj);
  s->dense_intermediate = dense ? static_cast<int>(dense->k) : card.intermediate_size / tp;
  s->n_experts = card.n_routed_experts;
  s->top_k = card.experts_per_token;
  s->n_shared = card.n_shared_experts;
  s->moe_intermediate = card.moe_intermediate_size / tp;  // TP-sharded experts
  if (const models::ProgramOp* conv = FindOp(p, op_ids::kLinearConv1d)) {
    s->linear_key_heads = static_cast<int>(conv->linear.key_heads);
    s->linear_value_heads = static_cast<int>(conv->linear.value_heads);
    s->linear_key_dim = static_cast<int>(conv->linear.key_dim);
    s->linear_value_dim = static_cast<int>(conv->linear.value_dim);
    s->linear_conv_kernel = static_cast<int>(conv->linear.conv_kernel);
  }
}

}  // namespace

Result<SliceConfig> MakeSliceConfig(const models::ModelCard& card, int tp, int layers,
                                    const std::string& dims, const models::PrecisionChoice& choice,
                                    uint64_t seed) {
  CAPPLAN_RETURN_IF_ERROR(CheckSliceArgs(card, tp, layers, dims, choice));
  const models::ModelCard slice_card = SliceCard(card, tp, layers, dims);
  CAPPLAN_ASSIGN_OR_RETURN(auto model, ShardSlice(slice_card, tp, dims, choice));
  SliceConfig s;
  s.model = card.name;
  s.dims = dims;
  s.tp = tp;
  s.layers = layers;
  s.attention = card.attention;
  s.attention_output_gate = card.attention_output_gate;
  s.first_k_dense = slice_card.first_k_dense;
  s.scoring = card.scoring_func;
  s.routed_scaling = card.routed_scaling_factor;
  s.kv_dtype = choice.kv_cache;
  s.seed = seed;
  auto fmt = [&](models::Component c) {
    auto it = model->formats.find(c);
    return it == model->formats.end() ? GemmWeightFormat::kBf16 : GemmFormatOf(it->second);
  };
  s.attention_format = fmt(models::Component::kAttention);
  s.experts_format = fmt(models::Component::kExperts);
  s.shared_format = fmt(models::Component::kSharedExperts);
  s.dense_ffn_format = fmt(models::Component::kDenseFfn);
  for (const auto& [c, f] : model->formats) {
    if (models::DtypeFamily(f.dtype) == models::Dtype::kInt4 && f.group_size > 0) {
      s.int4_group = f.group_size;
    }
  }
  ReadWidths(*model, &s);
  // Kept at small dims too: sharing is architecture, not width.
  s.index_share_every = s.index_topk > 0 && card.index_share_every > 0 ? card.index_share_every : 1;
  s.program = std::move(model);
  return s;
}

}  // namespace capplan::engine
