// The attention block of the layer program: q/kv projections in the card's
// tensor order, latent norms and RoPE, the KV append, the DSA indexer, the
// attention kernels in every form a batch may pick (decode; prefill, MLA
// expanded or absorbed), o_proj.
#include <algorithm>
#include <string_view>

#include "models/layer_program_internal.h"

namespace capplan::models::program_build {
namespace {

// The fields every attention kernel carries; the kind says the form.
ProgramOp AttentionKernel(const Builder& b, OpKind kind, const char* id, OpPhase phase, int heads,
                          int kv_heads, int head_dim) {
  const KvLayout& kv = b.m->kv;
  ProgramOp op;
  op.id = id;
  op.kind = kind;
  op.op_class = OpClass::kAttention;
  op.phase = phase;
  op.heads = heads;
  op.kv_heads = kv_heads;
  op.head_dim = head_dim;
  op.kv_dtype = kv.dtype;
  op.kernel_format = kv.dtype;
  // The KV layout counts the layers with a per-token cache: every softmax
  // layer, full or window-limited (a hybrid's linear layers keep a state).
  const double layers = std::max(1, b.m->card.FullAttentionLayers());
  op.kv_bytes_per_token = static_cast<double>(kv.main_bytes_per_token) / layers;
  op.index_bytes_per_token = static_cast<double>(kv.indexer_bytes_per_token) / layers;
  op.index_topk = b.m->card.index_topk;
  return op;
}

// The q/kv projections (o_proj comes after the attention kernels). MLA's
// kv_b_proj appears in both forms: absorbed (W_UK/W_UV on the decode rows,
// and on the prefill tokens of an absorbed prefill: the same FLOPs as kv_b
// on those rows) and expanded (kv_b expands the latents of every cached and
// new token of the prefill chunks).
void AddProjections(const Builder& b, const std::vector<WeightTensor>& tensors) {
  const ModelCard& card = b.m->card;
  for (const WeightTensor& t : tensors) {
    if (t.component != Component::kAttention) continue;
    const std::string_view name = t.name;
    if (name == op_ids::kOProj || name.starts_with("linear_attn.")) continue;
    const LocalShape s = ShardTensor(card, t, b.m->layout);
    const WeightFormat& f = b.m->formats.at(t.component);
    if (name == tensor_names::kKvBProj) {
      ProgramOp absorbed = GemmOp(b, op_ids::kKvBProjAbsorbed, OpClass::kDenseGemm, f, s.n, s.k, 1,
                                  RowSource::kAbsorbedMlaRows);
      absorbed.tensors = {t.name};
      b.p->layer_ops.push_back(std::move(absorbed));
      ProgramOp expand = GemmOp(b, op_ids::kKvBProjExpand, OpClass::kDenseGemm, f, s.n, s.k, 1,
                                RowSource::kPrefillKvTokens);
      expand.tensors = {t.name};
      expand.phase = OpPhase::kPrefill;
      expand.mla_form = MlaForm::kExpanded;
      b.p->layer_ops.push_back(std::move(expand));
    } else if (name.starts_with("attn.indexer.")) {
      ProgramOp op = GemmOp(b, t.name, OpClass::kAttention, f, s.n, s.k, 1, RowSource::kAttnTokens);
      op.filter.index_fresh_only = true;
      op.tensors = {t.name};
      b.p->layer_ops.push_back(std::move(op));
    } else {
      ProgramOp op = GemmOp(b, t.name, OpClass::kDenseGemm, f, s.n, s.k, 1, RowSource::kAttnTokens);
      op.tensors = {t.name};
      // The q latent's RMSNorm is applied with q_a_proj's output.
      if (name == op_ids::kQAProj) op.tensors.push_back(tensor_names::kQALayernorm);
      b.p->layer_ops.push_back(std::move(op));
    }
  }
}

// q/kv latent norms and RoPE (MLA) or RoPE on q and k (GQA), then the KV
// append: write each new token's cache entry (quantizing when FP8), reading
// the projected K/V (or latent) once.
void AddNormRopeAppend(const Builder& b) {
  const ModelCard& card = b.m->card;
  const KvLayout& kv = b.m->kv;
  const bool mla = card.attention == AttentionKind::kMla;
  if (mla) {
    const double e = card.q_lora_rank + card.kv_lora_rank +
                     double(card.num_heads) / b.attn_tp * card.qk_rope_head_dim +
                     card.qk_rope_head_dim;
    ProgramOp op = ElementwiseOp(op_ids::kNormRope, RowSource::kAttnTokens, e, e, 4.0 * e);
    op.tensors = {tensor_names::kKvALayernorm};
    b.p->layer_ops.push_back(std::move(op));
  } else {
    const double e = (double(card.num_heads) / b.attn_tp + kv.kv_heads_per_rank) * card.head_dim;
    b.p->layer_ops.push_back(ElementwiseOp(op_ids::kRope, RowSource::kAttnTokens, e, e, 4.0 * e));
  }
  ProgramOp op =
      AttentionKernel(b, OpKind::kKvAppend, op_ids::kKvAppend, OpPhase::kAlways, 0, 0, 0);
  op.rows = RowSource::kAttnTokens;
  const int64_t src = mla ? card.kv_lora_rank + card.qk_rope_head_dim
                          : 2 * int64_t{kv.kv_heads_per_rank} * card.head_dim;
  op.bytes_per_row = op.kv_bytes_per_token + op.index_bytes_per_token + src * b.a;
  b.p->layer_ops.push_back(std::move(op));
}

// DSA indexer: every query scores every cached token with index_n_heads x
// index_head_dim dot products, then selects the top-k; only the layers
// computing a fresh top-k run it (IndexShare).
void AddIndexer(const Builder& b) {
  const ModelCard& card = b.m->card;
  if (card.index_topk <= 0) return;
  ProgramOp op = AttentionKernel(b, OpKind::kDsaIndexer, op_ids::kIndexer, OpPhase::kAlways,
                                 card.index_n_heads, 0, card.index_head_dim);
  op.kv_dtype = b.facts->indexer_key_dtype;
  op.kernel_format = op.kv_dtype;
  op.filter.index_fresh_only = true;
  b.p->layer_ops.push_back(std::move(op));
}

void AddMlaKernels(const Builder& b, int heads) {
  const ModelCard& card = b.m->card;
  const int lora = card.kv_lora_rank, rope = card.qk_rope_head_dim;
  auto mla = [&](ProgramOp op) {
    op.kv_lora_rank = lora;
    op.rope_dim = rope;
    op.nope_dim = card.qk_nope_head_dim;
    op.v_head_dim = card.v_head_dim;
    op.filter.mixer = LayerFilter::Mixer::kFull;
    b.p->layer_ops.push_back(std::move(op));
  };
  // Absorbed decode: one latent "head" of lora + rope shared by all query heads.
  mla(AttentionKernel(b, OpKind::kMlaDecode, op_ids::kMlaDecode, OpPhase::kDecode, heads, 1,
                      lora + rope));
  ProgramOp absorbed = AttentionKernel(b, OpKind::kMlaPrefillAbsorbed, op_ids::kMlaPrefill,
                                       OpPhase::kPrefill, heads, 1, lora + rope);
  absorbed.mla_form = MlaForm::kAbsorbed;
  mla(std::move(absorbed));
  ProgramOp expanded =
      AttentionKernel(b, OpKind::kMlaPrefill, op_ids::kMlaPrefill, OpPhase::kPrefill, heads, heads,
                      card.qk_nope_head_dim + rope);
  expanded.mla_form = MlaForm::kExpanded;
  mla(std::move(expanded));
}

// GQA decode and prefill of the full-attention layers, then of the
// window-limited ones: the same kernels over the keys the window leaves
// (min(context, window) for sliding layers, the query's own chunk for
// chunked local ones; ops_attention.cc). gpt-oss's attention sinks add one
// learned logit per head to each softmax denominator: `heads` FLOPs and
// bytes per query beside heads x head_dim x keys, so they are not priced.
void AddGqaKernels(const Builder& b, int heads) {
  const ModelCard& card = b.m->card;
  const int kvh = b.m->kv.kv_heads_per_rank;
  using Mixer = LayerFilter::Mixer;
  auto add = [&](OpKind kind, const char* id, OpPhase phase, Mixer mixer) {
    ProgramOp op = AttentionKernel(b, kind, id, phase, heads, kvh, card.head_dim);
    op.filter.mixer = mixer;
    if (mixer == Mixer::kWindow) {
      op.window = card.sliding_window;
      op.window_chunked = card.local_attention == LocalAttention::kChunked;
    }
    b.p->layer_ops.push_back(std::move(op));
  };
  add(OpKind::kAttentionDecode, op_ids::kDecode, OpPhase::kDecode, Mixer::kFull);
  add(OpKind::kAttentionPrefill, op_ids::kPrefill, OpPhase::kPrefill, Mixer::kFull);
  if (card.sliding_window_layers == 0) return;
  add(OpKind::kAttentionDecode, op_ids::kDecodeWindow, OpPhase::kDecode, Mixer::kWindow);
  add(OpKind::kAttentionPrefill, op_ids::kPrefillWindow, OpPhase::kPrefill, Mixer::kWindow);
}

}  // namespace

void AddAttention(const Builder& b, const std::vector<WeightTensor>& tensors) {
  const ModelCard& card = b.m->card;
  const int heads = card.num_heads / std::max(1, b.attn_tp);
  const size_t first = b.p->layer_ops.size();
  AddProjections(b, tensors);
  AddNormRopeAppend(b);
  AddIndexer(b);
  if (card.attention == AttentionKind::kMla) {
    AddMlaKernels(b, heads);
  } else {
    AddGqaKernels(b, heads);
  }
  for (const WeightTensor& t : tensors) {
    if (std::string_view(t.name) != op_ids::kOProj) continue;
    const LocalShape s = ShardTensor(card, t, b.m->layout);
    ProgramOp op =
        GemmOp(b, op_ids::kOProj, OpClass::kDenseGemm, b.m->formats.at(Component::kAttention), s.n,
               s.k, 1, RowSource::kAttnTokens);
    op.tensors = {t.name};
    b.p->layer_ops.push_back(std::move(op));
  }
  // Every op of the block runs in the softmax-attention layers; the kernels
  // above narrowed themselves to the full or the window-limited ones.
  for (size_t i = first; i < b.p->layer_ops.size(); ++i) {
    LayerFilter& f = b.p->layer_ops[i].filter;
    if (f.mixer == LayerFilter::Mixer::kAny) f.mixer = LayerFilter::Mixer::kSoftmax;
  }
}

}  // namespace capplan::models::program_build
