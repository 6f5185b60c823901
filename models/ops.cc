// The operator list of one forward step on one GPU (ops.h). Conventions:
// GEMM FLOPs = 2*m*n*k; GEMM bytes = weights at their stored format (values
// + scales) + activations in (m*k) and out (m*n) in BF16. Collectives carry
// the per-GPU message size; their `bytes` are the HBM read+write of it.
#include "models/ops.h"

#include <algorithm>
#include <cmath>

#include "models/ops_internal.h"
#include "models/weight_tensors.h"

namespace capplan::models {

const char* OpKindName(OpKind k) {
  switch (k) {
    case OpKind::kGemm: return "gemm";
    case OpKind::kGroupedGemm: return "grouped_gemm";
    case OpKind::kRouter: return "router";
    case OpKind::kAttentionDecode: return "attention_decode";
    case OpKind::kAttentionPrefill: return "attention_prefill";
    case OpKind::kMlaDecode: return "mla_decode";
    case OpKind::kMlaPrefill: return "mla_prefill";
    case OpKind::kMlaPrefillAbsorbed: return "mla_prefill_absorbed";
    case OpKind::kDsaIndexer: return "dsa_indexer";
    case OpKind::kKvAppend: return "kv_append";
    case OpKind::kKvVerify: return "kv_verify";
    case OpKind::kAllReduce: return "all_reduce";
    case OpKind::kAllGather: return "all_gather";
    case OpKind::kReduceScatter: return "reduce_scatter";
    case OpKind::kAllToAll: return "all_to_all";
    case OpKind::kElementwise: return "elementwise";
    case OpKind::kEmbedding: return "embedding";
    case OpKind::kSampling: return "sampling";
  }
  return "?";
}

const char* OpClassName(OpClass c) {
  switch (c) {
    case OpClass::kAttention: return "attention";
    case OpClass::kDenseGemm: return "dense_gemm";
    case OpClass::kMoe: return "moe";
    case OpClass::kCommunication: return "communication";
    case OpClass::kElementwise: return "elementwise";
    case OpClass::kOverhead: return "overhead";
  }
  return "?";
}

int64_t BatchShape::TotalTokens() const {
  int64_t t = DecodeTokens();
  for (const Chunk& c : prefill) t += c.new_tokens;
  return t;
}

double ExpectedUniqueExperts(double tokens, int k, int n) {
  if (n <= 0 || k <= 0 || tokens <= 0) return 0;
  return n * (1.0 - std::pow(1.0 - static_cast<double>(k) / n, tokens));
}

Result<ShardedModel> ShardModel(const ModelCard& card, const ParallelLayout& layout,
                                const PrecisionChoice& choice) {
  CAPPLAN_RETURN_IF_ERROR(GetDtypeFacts().status());
  ShardedModel m;
  m.card = card;
  m.layout = layout;
  m.choice = choice;
  CAPPLAN_ASSIGN_OR_RETURN(m.weights, ComputeWeights(card, layout, choice));
  CAPPLAN_ASSIGN_OR_RETURN(m.formats, ResolveWeightFormats(card, choice));
  CAPPLAN_ASSIGN_OR_RETURN(m.kv, ComputeKvLayout(card, layout, choice.kv_cache));
  return m;
}

namespace {

// The activations the engines pair with the weights (the row's
// `activations`): W4A16 runs on BF16 tensor cores after dequantization, FP8
// weights W8A8 on FP8 tensor cores, NVFP4 W4A4 on FP4 ones.
Dtype ComputeDtype(const DtypeFacts& facts, Dtype weight) { return facts.Row(weight).activations; }

// INT4 GEMMs carry their group size (kernel tables key W4A16 curves by it).
int GroupSize(const DtypeFacts& facts, const WeightFormat& f) {
  return facts.Row(f.dtype).family == Dtype::kInt4 ? f.group_size : 0;
}

// A GEMM of m tokens against `copies` tensors of local shape n x k stored as
// `f` (copies > 1 fuses gate and up projections into one n*copies GEMM).
Op MakeGemm(const OpBuildContext& c, const char* name, OpClass cls, const WeightFormat& f,
            int64_t m, int64_t n, int64_t k, int copies, int64_t count) {
  Op op;
  op.kind = OpKind::kGemm;
  op.op_class = cls;
  op.name = name;
  op.count = count;
  op.m = m;
  op.n = n * copies;
  op.k = k;
  op.weight_dtype = f.dtype;
  op.compute_dtype = ComputeDtype(*c.facts, f.dtype);
  op.group_size = GroupSize(*c.facts, f);
  const double w = copies * static_cast<double>(c.facts->Bytes(f.dtype, n * k) +
                                                TensorScaleBytes(*c.facts, f, n, k));
  op.flops = 2.0 * m * op.n * k;
  op.bytes = w + static_cast<double>(m) * k * c.act_bytes + static_cast<double>(m) * op.n * c.act_bytes;
  return op;
}

Op MakeElementwise(const char* name, double elements_in, double elements_out, double flops,
                   int64_t act_bytes, int64_t count) {
  Op op;
  op.kind = OpKind::kElementwise;
  op.op_class = OpClass::kElementwise;
  op.name = name;
  op.count = count;
  op.flops = flops;
  op.bytes = (elements_in + elements_out) * act_bytes;
  return op;
}

Op MakeCollective(OpKind kind, const char* name, int participants, double message_bytes,
                  int64_t count) {
  Op op;
  op.kind = kind;
  op.op_class = OpClass::kCommunication;
  op.name = name;
  op.count = count;
  op.participants = participants;
  op.message_bytes = message_bytes;
  op.bytes = 2 * message_bytes;  // read the input, write the result
  return op;
}

// The routed-expert block of every MoE layer: the router GEMM, then the
// engines' fused MoE layer as one op -- top-k, the token sort, both grouped
// GEMMs with the activation between them, and the weighted combine -- which
// is what a fused-MoE kernel implementation runs and what its measurements
// time (their records count bytes and FLOPs by this same rule, MEASUREMENTS.md:
// touched experts' weights plus every row's input and output, and the
// FLOPs of the gate, up and down products); EP dispatch and combine around it.
void AppendMoeOps(const OpBuildContext& c, const std::vector<WeightTensor>& tensors,
                  int64_t t_ffn) {
  const ModelCard& card = c.m->card;
  const ParallelLayout& l = c.m->layout;
  const int64_t moe_layers = card.NumMoeLayers();
  const int E = card.n_routed_experts, k = card.experts_per_token;
  const int64_t h = card.hidden_size, a = c.act_bytes;
  std::vector<Op>* out = c.out;
  // Router GEMM (replicated, BF16) over E scores.
  {
    Op op = MakeGemm(c, "moe.gate", OpClass::kMoe, c.m->formats.at(Component::kRouter), t_ffn, E,
                     h, 1, moe_layers);
    op.kind = OpKind::kRouter;
    out->push_back(std::move(op));
  }
  const int ep = std::max(1, l.ep);
  // Balanced routing: this GPU's experts receive T*k/ep token-rows and
  // touch E/ep * (1-(1-k/E)^T) distinct experts, whose weights it reads.
  const double rows = double(t_ffn) * k / ep;
  const double touched = ExpectedUniqueExperts(double(t_ffn), k, E) / ep;
  const int64_t tokens_local = std::max<int64_t>(1, t_ffn / l.tp);
  const double msg = double(tokens_local) * k * h * a * (ep - 1) / ep;
  if (ep > 1) {
    // Dispatch: each of this GPU's tokens goes to its k experts; the share
    // bound for other EP ranks leaves the GPU. Combine returns as much.
    out->push_back(MakeCollective(OpKind::kAllToAll, "moe.dispatch", ep, msg, moe_layers));
  }
  const WeightFormat& f = c.m->formats.at(Component::kExperts);
  double w_expert = 0, width = 0;  // one expert's bytes; summed output width (gate+up+down)
  for (const WeightTensor& t : tensors) {
    if (t.component != Component::kExperts || t.is_norm_vector) continue;  // biases: no GEMM
    const LocalShape s = ShardTensor(card, t, l);
    const int copies = static_cast<int>(t.count / (int64_t{E} * moe_layers));
    w_expert += copies * double(c.facts->Bytes(f.dtype, s.n * s.k) +
                                TensorScaleBytes(*c.facts, f, s.n, s.k));
    width += double(copies) * s.n * s.k / h;
  }
  Op op;
  op.kind = OpKind::kGroupedGemm;
  op.op_class = OpClass::kMoe;
  op.name = "moe.experts";
  op.count = moe_layers;
  op.m = static_cast<int64_t>(std::ceil(rows));
  op.n = static_cast<int64_t>(std::llround(width));
  op.k = h;
  op.groups = static_cast<int64_t>(std::llround(touched));
  op.weight_dtype = f.dtype;
  op.compute_dtype = ComputeDtype(*c.facts, f.dtype);
  op.group_size = GroupSize(*c.facts, f);
  op.flops = 2.0 * rows * width * h;
  op.bytes = touched * w_expert + 2.0 * rows * h * a;
  out->push_back(std::move(op));
  if (ep > 1) {
    out->push_back(MakeCollective(OpKind::kAllToAll, "moe.combine", ep, msg, moe_layers));
  }
}

// Each op's kernel implementation as the engine chooses it: GEMMs by their
// weight format, attention by its KV format.
void AssignKernels(const KernelChoices& kernels, int ep, std::vector<Op>* ops) {
  if (kernels.empty()) return;
  for (Op& op : *ops) {
    const bool attention = op.op_class == OpClass::kAttention && op.kind != OpKind::kGemm;
    op.impl = op.kind == OpKind::kGroupedGemm && ep > 1
                  ? kernels.ForMoeEp(op.weight_dtype)
                  : kernels.For(op.kind, attention ? op.kv_dtype : op.weight_dtype);
  }
}

}  // namespace

void BuildStepOps(const ShardedModel& model, const BatchShape& batch, std::vector<Op>* out) {
  out->clear();
  const ModelCard& card = model.card;
  const ParallelLayout& l = model.layout;
  const DtypeFacts* facts = GetDtypeFacts().value();  // ShardModel checked it loads
  OpBuildContext c{&model, facts, facts->Bytes(Dtype::kBf16, 1), batch.TotalTokens(), out};
  const int64_t t_attn = c.attn_tokens;
  if (t_attn == 0) return;
  const int dp = l.AttentionRanks();
  const int attn_tp = l.AttentionTp();
  // Dense and MoE layers see the tokens of every attention rank (balanced).
  const int64_t t_ffn = t_attn * dp;
  const int64_t h = card.hidden_size, a = c.act_bytes;
  const int64_t L = card.num_layers;
  const int64_t n_decode = batch.DecodeTokens();  // query rows of the decode requests
  int64_t prefill_kv_tokens = 0;
  for (const auto& ch : batch.prefill) prefill_kv_tokens += ch.cached_tokens + ch.new_tokens;
  const int64_t fresh_index_layers =
      card.index_share_every > 0 ? (L + card.index_share_every - 1) / card.index_share_every : L;
  out->reserve(48);

  // Embedding gather (vocab-parallel: each rank gathers its rows, then the
  // partial rows are all-reduced).
  {
    Op op;
    op.kind = OpKind::kEmbedding;
    op.op_class = OpClass::kOverhead;
    op.name = "embed_tokens";
    op.q_tokens = t_attn;
    op.bytes = 2.0 * t_attn * h * a;
    out->push_back(std::move(op));
    if (attn_tp > 1) {
      out->push_back(MakeCollective(OpKind::kAllReduce, "embed.all_reduce", attn_tp,
                                    double(t_attn) * h * a, 1));
    }
  }
  // RMSNorm: read x and write y (~4 FLOPs per element).
  out->push_back(MakeElementwise("norm.input", double(t_attn) * h, double(t_attn) * h,
                                 4.0 * t_attn * h, a, L));

  const std::vector<WeightTensor> tensors = ListWeightTensors(card);
  const WeightTensor* o_proj = nullptr;
  for (const WeightTensor& t : tensors) {
    if (t.component != Component::kAttention) continue;
    const LocalShape s = ShardTensor(card, t, l);
    const WeightFormat& f = model.formats.at(t.component);
    const std::string_view name = t.name;
    if (name == "attn.o_proj") {
      o_proj = &t;
    } else if (name == "attn.kv_b_proj") {
      // Decode (absorbed): W_UK/W_UV act on the decode queries/outputs, the
      // same FLOPs as kv_b on n_decode rows. Prefill (non-absorbed): kv_b
      // expands the latents of every cached and new token of the chunks.
      // An absorbed prefill maps its new tokens' queries and outputs the
      // same way instead of expanding the cached latents.
      const bool absorbed = AbsorbedMlaPrefill(model, batch);
      const int64_t absorbed_rows = n_decode + (absorbed ? t_attn - n_decode : 0);
      if (absorbed_rows > 0) {
        out->push_back(MakeGemm(c, "attn.kv_b_proj.absorbed", OpClass::kDenseGemm, f,
                                absorbed_rows, s.n, s.k, 1, L));
      }
      if (prefill_kv_tokens > 0 && !absorbed) {
        out->push_back(MakeGemm(c, "attn.kv_b_proj.expand", OpClass::kDenseGemm, f,
                                prefill_kv_tokens, s.n, s.k, 1, L));
      }
    } else if (name.starts_with("attn.indexer.")) {
      if (card.index_topk > 0) {
        out->push_back(MakeGemm(c, t.name, OpClass::kAttention, f, t_attn, s.n, s.k, 1,
                                fresh_index_layers));
      }
    } else {
      out->push_back(MakeGemm(c, t.name, OpClass::kDenseGemm, f, t_attn, s.n, s.k, 1, L));
    }
  }
  // q/kv latent norms and RoPE (MLA) or RoPE on q and k (GQA).
  if (card.attention == AttentionKind::kMla) {
    const double e = double(t_attn) * (card.q_lora_rank + card.kv_lora_rank +
                                       double(card.num_heads) / attn_tp * card.qk_rope_head_dim +
                                       card.qk_rope_head_dim);
    out->push_back(MakeElementwise("attn.norm_rope", e, e, 4.0 * e, a, L));
  } else {
    const double e = double(t_attn) * (double(card.num_heads) / attn_tp + model.kv.kv_heads_per_rank) *
                     card.head_dim;
    out->push_back(MakeElementwise("attn.rope", e, e, 4.0 * e, a, L));
  }
  AppendAttentionOps(c, batch);
  if (o_proj != nullptr) {
    const LocalShape s = ShardTensor(card, *o_proj, l);
    out->push_back(MakeGemm(c, "attn.o_proj", OpClass::kDenseGemm,
                            model.formats.at(Component::kAttention), t_attn, s.n, s.k, 1, L));
  }
  // Attention output: all-reduce inside the attention TP group; with DP
  // attention the FFN's TP group then gathers every rank's tokens.
  if (attn_tp > 1) {
    out->push_back(MakeCollective(OpKind::kAllReduce, "attn.all_reduce", attn_tp,
                                  double(t_attn) * h * a, L));
  }
  if (dp > 1) {
    out->push_back(MakeCollective(OpKind::kAllGather, "dp.all_gather", l.tp,
                                  double(t_ffn) * h * a, L));
  }
  // Residual add + post-attention RMSNorm: read x and residual, write both.
  out->push_back(MakeElementwise("norm.post_attention", 2.0 * t_ffn * h, 2.0 * t_ffn * h,
                                 5.0 * t_ffn * h, a, L));

  // Dense FFN layers: gate+up fused, SiLU-and-mul, down.
  for (const WeightTensor& t : tensors) {
    if (t.component != Component::kDenseFfn && t.component != Component::kSharedExperts) continue;
    const LocalShape s = ShardTensor(card, t, l);
    const WeightFormat& f = model.formats.at(t.component);
    const bool dense = t.component == Component::kDenseFfn;
    const int64_t layers = dense ? card.NumDenseLayers() : card.NumMoeLayers();
    // A model slice can hold no layer of this kind (an engine run of fewer
    // layers than the card's leading dense ones): then it has no such ops.
    if (layers == 0) continue;
    const int copies = static_cast<int>(s.count / layers);  // 2 for gate+up, x shared experts
    const OpClass cls = dense ? OpClass::kDenseGemm : OpClass::kMoe;
    out->push_back(MakeGemm(c, t.name, cls, f, t_ffn, s.n, s.k, copies, layers));
    if (std::string_view(t.name).ends_with("gate_up_proj")) {
      const double f_local = double(s.n) * copies / 2;
      out->push_back(MakeElementwise(dense ? "dense.silu_and_mul" : "moe.shared.silu_and_mul",
                                     2.0 * t_ffn * f_local, double(t_ffn) * f_local,
                                     4.0 * t_ffn * f_local, a, layers));
    }
  }

  if (card.IsMoe() && card.NumMoeLayers() > 0) AppendMoeOps(c, tensors, t_ffn);

  // FFN output: all-reduce over TP, or reduce-scatter back to the attention
  // ranks with DP attention.
  if (dp > 1) {
    out->push_back(MakeCollective(OpKind::kReduceScatter, "dp.reduce_scatter", l.tp,
                                  double(t_ffn) * h * a, L));
  } else if (l.tp > 1) {
    out->push_back(MakeCollective(OpKind::kAllReduce, "ffn.all_reduce", l.tp,
                                  double(t_attn) * h * a, L));
  }
  out->push_back(MakeElementwise("norm.residual", 2.0 * t_attn * h, double(t_attn) * h,
                                 double(t_attn) * h, a, L));

  // Final norm, LM head on the rows that need logits (each decode request and
  // the last token of each prefill chunk), logits all-gather, sampling.
  const int64_t rows = (n_decode + static_cast<int64_t>(batch.prefill.size())) * dp;
  out->push_back(MakeElementwise("norm.final", double(rows) * h, double(rows) * h,
                                 4.0 * rows * h, a, 1));
  for (const WeightTensor& t : tensors) {
    const bool head = std::string_view(t.name) == "lm_head" ||
                      (card.tie_word_embeddings && std::string_view(t.name) == "embed_tokens");
    if (!head) continue;
    const LocalShape s = ShardTensor(card, t, l);
    out->push_back(MakeGemm(c, "lm_head", OpClass::kDenseGemm,
                            model.formats.at(Component::kEmbeddings), rows, s.n, s.k, 1, 1));
    if (l.tp > 1) {
      out->push_back(MakeCollective(OpKind::kAllGather, "logits.all_gather", l.tp,
                                    double(rows) * card.vocab_size * a, 1));
    }
  }
  Op sample;
  sample.kind = OpKind::kSampling;
  sample.op_class = OpClass::kOverhead;
  sample.name = "sampling";
  sample.batch = rows;
  sample.bytes = double(rows) * card.vocab_size * facts->Bytes(Dtype::kFp32, 1);
  sample.flops = 5.0 * rows * card.vocab_size;  // softmax: max, sub, exp, sum, div
  out->push_back(std::move(sample));
  AssignKernels(model.kernels, l.ep, out);
}

}  // namespace capplan::models
