#include "models/weight_tensors.h"

#include <algorithm>

#include "models/op_ids.h"

namespace capplan::models {

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Gated DeltaNet layers (transformers Qwen3NextGatedDeltaNet): in_proj_qkvz
// (q, k at the key width, v and the output gate z at the value width),
// in_proj_ba (beta and the decay input a, one per value head), a depthwise
// causal conv over q/k/v, per-head dt_bias and A_log, a gated RMSNorm of
// value_head_dim and out_proj. Engines split them by heads over attention TP
// (SGLang and vLLM qwen3_next.py: column-parallel in_proj and conv, row-
// parallel out_proj).
void AppendLinearAttentionTensors(const ModelCard& c, std::vector<WeightTensor>* t) {
  const LinearAttention& la = c.linear_attention;
  if (la.layers == 0) return;
  const int64_t n = la.layers, h = c.hidden_size;
  const Component kA = Component::kAttention, kN = Component::kNorms;
  t->push_back({kA, op_ids::kLinearInProjQkvz, 2 * la.KeyDim() + 2 * la.ValueDim(), h, n,
                ShardKind::kAttnColumn});
  t->push_back(
      {kA, op_ids::kLinearInProjBa, 2 * int64_t{la.num_value_heads}, h, n, ShardKind::kAttnColumn});
  // Depthwise conv weight [conv_dim, 1, kernel]: not a GEMM, never quantized.
  t->push_back(
      {kN, op_ids::kLinearConv1d, la.ConvDim(), la.conv_kernel, n, ShardKind::kAttnColumn, true});
  t->push_back({kN, tensor_names::kLinearDtBiasALog, la.num_value_heads, 1, 2 * n,
                ShardKind::kAttnColumn, true});
  t->push_back(
      {kN, tensor_names::kLinearNorm, la.value_head_dim, 1, n, ShardKind::kReplicated, true});
  t->push_back({kA, op_ids::kLinearOutProj, h, la.ValueDim(), n, ShardKind::kAttnRow});
}

// MLA attention (DeepSeek-V3 lineage), with the DSA indexer where the card
// has one. Shapes follow the HF modeling code.
void AppendMlaTensors(const ModelCard& c, std::vector<WeightTensor>* out) {
  std::vector<WeightTensor>& t = *out;
  const int64_t L = c.num_layers, h = c.hidden_size;
  const Component kA = Component::kAttention, kN = Component::kNorms;
  const int64_t qk = c.qk_nope_head_dim + c.qk_rope_head_dim;
  if (c.q_lora_rank > 0) {
    t.push_back({kA, op_ids::kQAProj, c.q_lora_rank, h, L, ShardKind::kReplicated});
    t.push_back(
        {kN, tensor_names::kQALayernorm, c.q_lora_rank, 1, L, ShardKind::kReplicated, true});
    t.push_back({kA, op_ids::kQBProj, c.num_heads * qk, c.q_lora_rank, L, ShardKind::kAttnColumn});
  } else {
    t.push_back({kA, op_ids::kQProj, c.num_heads * qk, h, L, ShardKind::kAttnColumn});
  }
  t.push_back(
      {kA, op_ids::kKvAProj, c.kv_lora_rank + c.qk_rope_head_dim, h, L, ShardKind::kReplicated});
  t.push_back(
      {kN, tensor_names::kKvALayernorm, c.kv_lora_rank, 1, L, ShardKind::kReplicated, true});
  t.push_back({kA, tensor_names::kKvBProj, c.num_heads * (c.qk_nope_head_dim + c.v_head_dim),
               c.kv_lora_rank, L, ShardKind::kAttnColumn});
  t.push_back({kA, op_ids::kOProj, h, c.num_heads * c.v_head_dim, L, ShardKind::kAttnRow});
  if (c.index_topk > 0) {
    // DSA indexer (DeepSeek-V3.2 / GLM-5 modeling code): wq_b from the q
    // latent, wk from the hidden state, a per-head weight projection and a
    // LayerNorm (weight + bias) on the keys. Small, so replicated.
    const int64_t qin = c.q_lora_rank > 0 ? c.q_lora_rank : h;
    t.push_back({kA, op_ids::kIndexerWqB, int64_t{c.index_n_heads} * c.index_head_dim, qin, L,
                 ShardKind::kReplicated});
    t.push_back({kA, op_ids::kIndexerWk, c.index_head_dim, h, L, ShardKind::kReplicated});
    t.push_back({kA, op_ids::kIndexerWeightsProj, c.index_n_heads, h, L, ShardKind::kReplicated});
    t.push_back({kN, "attn.indexer.k_norm", 2 * int64_t{c.index_head_dim}, 1, L,
                 ShardKind::kReplicated, true});
  }
}

// GQA/MHA attention of the softmax-attention layers (a hybrid's linear
// layers have tensors of their own).
void AppendGqaTensors(const ModelCard& c, std::vector<WeightTensor>* out) {
  std::vector<WeightTensor>& t = *out;
  const int64_t h = c.hidden_size;
  const Component kA = Component::kAttention, kN = Component::kNorms;
  const int64_t hd = c.head_dim;
  const int64_t L = c.FullAttentionLayers();
  const int64_t q_width = c.num_heads * hd * (c.attention_output_gate ? 2 : 1);
  t.push_back({kA, op_ids::kQProj, q_width, h, L, ShardKind::kAttnColumn});
  t.push_back({kA, op_ids::kKProj, c.num_kv_heads * hd, h, L, ShardKind::kKvHeads});
  t.push_back({kA, op_ids::kVProj, c.num_kv_heads * hd, h, L, ShardKind::kKvHeads});
  t.push_back({kA, op_ids::kOProj, h, c.num_heads * hd, L, ShardKind::kAttnRow});
  if (c.qkv_bias) {
    t.push_back({kN, "attn.q_proj.bias", c.num_heads * hd, 1, L, ShardKind::kAttnColumn, true});
    t.push_back({kN, "attn.kv_proj.bias", c.num_kv_heads * hd, 1, 2 * L, ShardKind::kKvHeads,
                 true});
  }
  if (c.o_bias) t.push_back({kN, "attn.o_proj.bias", h, 1, L, ShardKind::kReplicated, true});
  if (c.attention_sinks) {
    t.push_back({kN, "attn.sinks", c.num_heads, 1, L, ShardKind::kAttnColumn, true});
  }
  if (c.qk_norm) {
    // Qwen3: one RMSNorm weight of head_dim shared by all q heads, one by
    // all k heads, per layer; every rank holds both.
    t.push_back({kN, "attn.q_norm", hd, 1, L, ShardKind::kReplicated, true});
    t.push_back({kN, "attn.k_norm", hd, 1, L, ShardKind::kReplicated, true});
  }
}

// Dense FFN layers, routed and shared experts, and the router.
void AppendFfnTensors(const ModelCard& c, std::vector<WeightTensor>* out) {
  std::vector<WeightTensor>& t = *out;
  const int64_t h = c.hidden_size;
  if (c.NumDenseLayers() > 0) {
    const int64_t d = c.NumDenseLayers(), f = c.intermediate_size;
    t.push_back(
        {Component::kDenseFfn, op_ids::kDenseGateUpProj, f, h, 2 * d, ShardKind::kTpColumn});
    t.push_back({Component::kDenseFfn, op_ids::kDenseDownProj, h, f, d, ShardKind::kTpRow});
  }
  if (c.IsMoe()) {
    const int64_t m = c.NumMoeLayers(), f = c.moe_intermediate_size;
    const int64_t e = int64_t{c.n_routed_experts} * m;
    t.push_back({Component::kExperts, tensor_names::kExpertsGateUpProj, f, h, 2 * e,
                 ShardKind::kExpertColumn});
    t.push_back(
        {Component::kExperts, tensor_names::kExpertsDownProj, h, f, e, ShardKind::kExpertRow});
    if (c.n_shared_experts > 0) {
      const int64_t s = int64_t{c.n_shared_experts} * m;
      t.push_back({Component::kSharedExperts, op_ids::kSharedGateUpProj, f, h, 2 * s,
                   ShardKind::kTpColumn});
      t.push_back({Component::kSharedExperts, op_ids::kSharedDownProj, h, f, s, ShardKind::kTpRow});
    }
    if (c.shared_expert_gate) {
      t.push_back({Component::kRouter, "moe.shared_expert_gate", 1, h, m, ShardKind::kReplicated});
    }
    t.push_back(
        {Component::kRouter, op_ids::kMoeGate, c.n_routed_experts, h, m, ShardKind::kReplicated});
    if (c.moe_bias) {
      t.push_back({Component::kRouter, "moe.gate.bias", c.n_routed_experts, 1, m,
                   ShardKind::kReplicated, true});
      t.push_back({Component::kExperts, "moe.experts.gate_up_proj.bias", f, 1, 2 * e,
                   ShardKind::kExpertColumn, true});
      t.push_back({Component::kExperts, "moe.experts.down_proj.bias", h, 1, e,
                   ShardKind::kExpertRow, true});
    }
    if (c.score_correction_bias) {
      // DeepSeek-V3 lineage: e_score_correction_bias, one per expert.
      t.push_back({Component::kRouter, "moe.gate.e_score_correction_bias", c.n_routed_experts, 1,
                   m, ShardKind::kReplicated, true});
    }
  }
}

}  // namespace

std::vector<WeightTensor> ListWeightTensors(const ModelCard& c) {
  std::vector<WeightTensor> t;
  const int64_t h = c.hidden_size;
  const Component kN = Component::kNorms;
  // Attention per layer; shapes follow the HF modeling code of each family.
  if (c.attention == AttentionKind::kMla) {
    AppendMlaTensors(c, &t);
  } else {
    AppendGqaTensors(c, &t);
  }
  AppendLinearAttentionTensors(c, &t);
  // input_layernorm and post_attention_layernorm per layer, plus the final norm.
  for (const char* norm : {op_ids::kNormInput, op_ids::kNormPostAttention}) {
    t.push_back({kN, norm, h, 1, c.num_layers, ShardKind::kReplicated, true});
  }
  t.push_back({kN, op_ids::kNormFinal, h, 1, 1, ShardKind::kReplicated, true});
  AppendFfnTensors(c, &t);
  t.push_back(
      {Component::kEmbeddings, op_ids::kEmbedTokens, c.vocab_size, h, 1, ShardKind::kVocabAttnTp});
  if (!c.tie_word_embeddings) {
    t.push_back({Component::kEmbeddings, op_ids::kLmHead, c.vocab_size, h, 1, ShardKind::kVocabTp});
  }
  return t;
}

namespace {

// The fullest EP rank's share of a routed-expert tensor's `count` (experts x
// layers x copies): ceil(E / ep) whole experts, as an uneven split gives its
// first ranks.
int64_t ExpertShare(const ModelCard& card, int64_t count, int64_t ep) {
  const int64_t experts = std::max(1, card.n_routed_experts);
  if (count % experts != 0) return CeilDiv(count, ep);
  return CeilDiv(experts, ep) * (count / experts);
}

}  // namespace

LocalShape ShardTensor(const ModelCard& card, const WeightTensor& t, const ParallelLayout& l) {
  LocalShape s{t.n, t.k, t.count};
  const int64_t attn_tp = std::max(1, l.AttentionTp());
  const int64_t ep = std::max(1, l.ep);
  // Under DeepEP SGLang builds the shared experts unsharded ("disable tp for
  // shared experts when enable deepep moe": DeepseekV2MoE, tp_size 1 in
  // sgl-project/sglang python/sglang/srt/models/deepseek_v2.py) and runs
  // them on each rank's own tokens.
  if (t.component == Component::kSharedExperts && l.expert.all_to_all == MoeAllToAll::kDeepEp) {
    return s;
  }
  // Dense FFN layers kept on each DP rank shard over its attention TP group.
  const int64_t tp = t.component == Component::kDenseFfn ? std::max(1, l.DenseFfnTp())
                                                         : std::max(1, l.tp);
  switch (t.shard) {
    case ShardKind::kReplicated: break;
    case ShardKind::kAttnColumn: s.n = CeilDiv(t.n, attn_tp); break;
    case ShardKind::kAttnRow: s.k = CeilDiv(t.k, attn_tp); break;
    case ShardKind::kKvHeads: {
      // SGLang get_num_kv_heads: max(1, kv_heads // tp); replicated when
      // kv_heads < tp (SGLang get_num_kv_heads = max(1, kv_heads // tp)).
      const int64_t heads = std::max<int64_t>(1, card.num_kv_heads / attn_tp);
      s.n = heads * card.head_dim;
      break;
    }
    case ShardKind::kTpColumn: s.n = CeilDiv(t.n, tp); break;
    case ShardKind::kTpRow: s.k = CeilDiv(t.k, tp); break;
    case ShardKind::kExpertColumn:
      s.count = ExpertShare(card, t.count, ep);
      s.n = CeilDiv(t.n, std::max<int64_t>(1, tp / ep));
      break;
    case ShardKind::kExpertRow:
      s.count = ExpertShare(card, t.count, ep);
      s.k = CeilDiv(t.k, std::max<int64_t>(1, tp / ep));
      break;
    case ShardKind::kVocabAttnTp: s.n = CeilDiv(t.n, attn_tp); break;
    case ShardKind::kVocabTp: s.n = CeilDiv(t.n, l.LmHeadTp()); break;
  }
  return s;
}

}  // namespace capplan::models
