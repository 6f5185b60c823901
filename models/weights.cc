// Weight formats, layout validation and per-GPU weight bytes (memory.h).
#include <algorithm>
#include <string>

#include "common/did_you_mean.h"
#include "models/dtype_facts.h"
#include "models/memory.h"
#include "models/weight_tensors.h"

namespace capplan::models {

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Applies a "default" or weight-choice name to one component. A component
// already stored in the requested format (or, asking for a family's base
// row, in any of its variants) keeps its checkpoint layout (Kimi's INT4 g32
// experts stay g32 under `weights: int4`).
Status ApplyChoice(const DtypeFacts& facts, const ModelCard& card, Component c,
                   const std::string& choice, const std::string& what, WeightFormat* out) {
  const WeightFormat& ckpt = card.checkpoint.at(c);
  if (choice == "default") {
    *out = ckpt;
    return Status::Ok();
  }
  auto it = facts.requantize.find(choice);
  if (it == facts.requantize.end()) {
    return Status::Usage(what + ": unknown weight format '" + choice + "'" +
                         DidYouMean(choice, WeightChoiceNames()));
  }
  const Dtype want = it->second.dtype;
  const bool keep = want == ckpt.dtype || want == facts.Row(ckpt.dtype).family;
  *out = keep ? ckpt : it->second;
  return Status::Ok();
}

}  // namespace

Result<std::map<Component, WeightFormat>> ResolveWeightFormats(const ModelCard& card,
                                                               const PrecisionChoice& choice) {
  CAPPLAN_ASSIGN_OR_RETURN(const DtypeFacts* facts, GetDtypeFacts());
  std::map<Component, WeightFormat> out;
  const std::vector<Component>& set = card.QuantizedBy(choice.weights);
  for (Component c : AllComponents()) {
    const bool quantizable = std::find(set.begin(), set.end(), c) != set.end();
    CAPPLAN_RETURN_IF_ERROR(ApplyChoice(*facts, card, c, quantizable ? choice.weights : "default",
                                        "--weights", &out[c]));
  }
  for (const auto& [c, s] : choice.per_component) {
    CAPPLAN_RETURN_IF_ERROR(
        ApplyChoice(*facts, card, c, s, std::string("weights.") + ComponentName(c), &out[c]));
  }
  return out;
}

Status ValidateLayout(const ModelCard& card, const ParallelLayout& l) {
  auto bad = [&](const std::string& m) { return Status::Invalid(m + " (model " + card.name + ")"); };
  // Named as the CLI flag and the scenario field both spell it (tp, ep).
  const auto degree = [](const char* what, int v) {
    return Status::Usage(std::string(what) + " must be in [1, " + std::to_string(kMaxParallelDegree) +
                         "], got " + std::to_string(v));
  };
  if (l.tp < 1 || l.tp > kMaxParallelDegree) return degree("tp", l.tp);
  if (l.ep < 1 || l.ep > kMaxParallelDegree) return degree("ep", l.ep);
  if (l.gpus < 1 || l.gpus > 65536) {
    return Status::Usage("--gpus must be in [1, 65536], got " + std::to_string(l.gpus));
  }
  // Pipeline parallelism is not modeled: one instance is one TP group.
  if (l.gpus != l.tp) {
    return bad("--gpus " + std::to_string(l.gpus) + " must equal --tp " + std::to_string(l.tp) +
               ": one instance is one TP group (no pipeline parallelism); set --tp " +
               std::to_string(l.gpus));
  }
  if (l.dp_attention) {
    if (l.dp < 1 || l.tp % l.dp != 0) {
      return bad("--dp " + std::to_string(l.dp) + " must divide --tp " + std::to_string(l.tp));
    }
  }
  const int attn_tp = l.AttentionTp();
  if (card.num_heads % attn_tp != 0) {
    return bad("attention TP " + std::to_string(attn_tp) + " does not divide num_heads " +
               std::to_string(card.num_heads) + "; pick a --tp that divides it");
  }
  if (card.attention == AttentionKind::kGqa && card.num_kv_heads % attn_tp != 0 &&
      attn_tp % card.num_kv_heads != 0) {
    return bad("attention TP " + std::to_string(attn_tp) + " and num_kv_heads " +
               std::to_string(card.num_kv_heads) + " must divide one another");
  }
  const LinearAttention& la = card.linear_attention;
  if (la.layers > 0 && (la.num_key_heads % attn_tp != 0 || la.num_value_heads % attn_tp != 0)) {
    return bad("attention TP " + std::to_string(attn_tp) + " must divide the linear-attention "
               "key and value heads (" + std::to_string(la.num_key_heads) + ", " +
               std::to_string(la.num_value_heads) + ")");
  }
  if (card.NumDenseLayers() > 0 && card.intermediate_size % l.DenseFfnTp() != 0) {
    return bad("--tp " + std::to_string(l.DenseFfnTp()) + " does not divide intermediate_size " +
               std::to_string(card.intermediate_size));
  }
  if (!card.IsMoe()) {
    if (l.ep != 1) return bad("--ep " + std::to_string(l.ep) + " needs an MoE model");
    return Status::Ok();
  }
  if (l.tp % l.ep != 0) {
    return bad("--ep " + std::to_string(l.ep) + " must divide --tp " + std::to_string(l.tp) +
               " (experts are split over EP ranks inside the TP group)");
  }
  // Whether routed + redundant experts must divide over the ranks is the
  // engine version's rule (CheckExpertSplit); every rank needs one expert.
  if (l.ep > card.n_routed_experts + l.expert.redundant_experts) {
    return bad("--ep " + std::to_string(l.ep) + " is more than the " +
               std::to_string(card.n_routed_experts + l.expert.redundant_experts) +
               " experts to place; lower it");
  }
  const int inner_tp = l.tp / l.ep;
  if (card.moe_intermediate_size % inner_tp != 0) {
    return bad("expert TP " + std::to_string(inner_tp) + " does not divide moe_intermediate_size " +
               std::to_string(card.moe_intermediate_size) + "; raise --ep");
  }
  // Under DeepEP the shared experts run unsharded on every rank
  // (ShardTensor), so TP need not divide them.
  const bool shared_sharded = l.expert.all_to_all != MoeAllToAll::kDeepEp;
  if (shared_sharded && card.n_shared_experts > 0 && card.moe_intermediate_size % l.tp != 0) {
    return bad("--tp " + std::to_string(l.tp) + " does not divide the shared experts' "
               "intermediate size " + std::to_string(card.moe_intermediate_size));
  }
  return Status::Ok();
}

int64_t TensorScaleBytes(const DtypeFacts& facts, const WeightFormat& f, int64_t n, int64_t k) {
  const hw::ScaleLayout& row = facts.Row(f.dtype).scale;
  if (row.granularity.empty()) return 0;  // unscaled (16- and 32-bit formats)
  const int64_t scale = facts.Bytes(f.scale_dtype, 1);
  const int64_t per_tensor = row.fp32_tensor_scales * facts.Bytes(Dtype::kFp32, 1);
  if (f.block_rows > 0) {
    return CeilDiv(n, f.block_rows) * CeilDiv(k, f.block_cols) * scale + per_tensor;
  }
  if (f.group_size > 0) {
    // One scale (and a zero point when asymmetric) per group along k, per row.
    return n * CeilDiv(k, f.group_size) * scale * (f.symmetric ? 1 : 2) + per_tensor;
  }
  if (row.granularity == "channel") return n * scale + per_tensor;
  return scale + per_tensor;  // one per-tensor scale
}

Result<WeightBreakdown> ComputeWeights(const ModelCard& card, const ParallelLayout& layout,
                                       const PrecisionChoice& choice) {
  CAPPLAN_RETURN_IF_ERROR(ValidateLayout(card, layout));
  CAPPLAN_ASSIGN_OR_RETURN(const DtypeFacts* facts, GetDtypeFacts());
  CAPPLAN_ASSIGN_OR_RETURN(auto formats, ResolveWeightFormats(card, choice));
  WeightBreakdown wb;
  std::map<Component, ComponentWeights> by;
  for (const WeightTensor& t : ListWeightTensors(card)) {
    // 1-D weights (norms, biases) stay in BF16 whatever the component format.
    const WeightFormat f = t.is_norm_vector ? WeightFormat{} : formats.at(t.component);
    const LocalShape s = ShardTensor(card, t, layout);
    ComponentWeights& cw = by[t.component];
    cw.component = t.component;
    cw.format = formats.at(t.component);
    cw.params_total += t.n * t.k * t.count;
    cw.params_per_gpu += s.n * s.k * s.count;
    cw.bytes_per_gpu += s.count * facts->Bytes(f.dtype, s.n * s.k);
    cw.scale_bytes_per_gpu += s.count * TensorScaleBytes(*facts, f, s.n, s.k);
  }
  for (Component c : AllComponents()) {
    auto it = by.find(c);
    if (it == by.end()) continue;
    wb.components.push_back(it->second);
    wb.params_total += it->second.params_total;
    wb.params_per_gpu += it->second.params_per_gpu;
    wb.bytes_per_gpu += it->second.bytes_per_gpu + it->second.scale_bytes_per_gpu;
  }
  return wb;
}

Result<KvLayout> ComputeKvLayout(const ModelCard& card, const ParallelLayout& layout, Dtype kv) {
  CAPPLAN_ASSIGN_OR_RETURN(const DtypeFacts* f, GetDtypeFacts());
  const std::vector<std::string>& kv_names = f->table->kv_choices;
  if (std::find(kv_names.begin(), kv_names.end(), DtypeName(kv)) == kv_names.end()) {
    std::string names;
    for (const std::string& n : kv_names) names += (names.empty() ? "" : ", ") + n;
    return Status::Usage(std::string("--kv: KV cache dtype must be one of ") + names + ", got " +
                         DtypeName(kv));
  }
  const bool fp8 = DtypeFamily(kv) == Dtype::kFp8E4m3;
  if (card.index_topk > 0 && !fp8 && f->Bits(kv) < 16) {
    return Status::Usage(std::string("--kv: ") + DtypeName(kv) + " KV has no sparse-attention "
                         "(DSA) layout; use bf16 or fp8 for " + card.name);
  }
  if (f->Row(kv).kv_scale.granularity == "token_head" && card.attention == AttentionKind::kMla) {
    return Status::Usage(std::string("--kv: ") + DtypeName(kv) + " scales each KV head; " +
                         card.name + " caches one MLA latent per token (the format runs on "
                         "vLLM's Triton attention backend, not MLA); use fp8");
  }
  // A hybrid's linear layers keep a per-sequence state, not per-token KV.
  const int64_t L = card.FullAttentionLayers();
  KvLayout out;
  out.dtype = kv;
  if (card.attention == AttentionKind::kMla) {
    // The latent (kv_lora) and the rope key are replicated on every
    // attention rank (SGLang profile_max_num_token: the MLA cell is not
    // divided by TP).
    const int64_t lora = card.kv_lora_rank, rope = card.qk_rope_head_dim;
    if (fp8 && card.index_topk > 0) {
      // DSA FP8 layout (non-trtllm): fp8 latent + fp32 scale per 128 + rope in BF16.
      const int64_t scales = lora / f->dsa_fp8_scale_block * f->dsa_fp8_scale_bytes;
      out.main_bytes_per_token = L * (f->Bytes(kv, lora) + scales +
                                      f->Bytes(f->dsa_fp8_rope_dtype, rope));
      out.scale_bytes_per_token += L * scales;
    } else {
      const int64_t scales = f->KvScaleBytes(kv, lora + rope);
      out.main_bytes_per_token = L * (f->Bytes(kv, lora + rope) + scales);
      out.scale_bytes_per_token += L * scales;
    }
    out.kv_heads_per_rank = 1;
  } else {
    const int heads = std::max(1, card.num_kv_heads / std::max(1, layout.AttentionTp()));
    out.kv_heads_per_rank = heads;
    // K and V, head_dim each (v_head_dim == head_dim for these models).
    // K and V are scaled apart (a group never spans both).
    const int64_t scales = 2 * f->KvScaleBytes(kv, card.head_dim);
    out.main_bytes_per_token = L * heads * (f->Bytes(kv, 2 * int64_t{card.head_dim}) + scales);
    out.scale_bytes_per_token += L * heads * scales;
  }
  if (card.index_topk > 0) {
    // DSA index keys are fp8 + fp32 scale per 128 whatever the KV dtype.
    const int64_t scales =
        card.index_head_dim / f->indexer_scale_block * f->indexer_scale_bytes;
    out.indexer_bytes_per_token = L * (f->Bytes(f->indexer_key_dtype, card.index_head_dim) + scales);
    out.scale_bytes_per_token += L * scales;
  }
  out.bytes_per_token = out.main_bytes_per_token + out.indexer_bytes_per_token;
  return out;
}

}  // namespace capplan::models
