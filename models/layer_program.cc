// The layer program of one GPU (layer_program.h): the op list of a
// deployment, built once from the card's weight tensors and the layout.
// Conventions: a GEMM's weight bytes are its tensors at their stored format
// (values + scales); activations move as BF16; collectives carry the
// per-GPU message.
#include "models/layer_program.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "models/dtype_facts.h"
#include "models/layer_program_internal.h"
#include "models/weight_tensors.h"

namespace capplan::models {

const LayerGroup* LayerProgram::GroupOf(int layer) const {
  for (const LayerGroup& g : groups) {
    if (std::binary_search(g.layers.begin(), g.layers.end(), layer)) return &g;
  }
  return nullptr;
}

std::string_view KernelImpl(const KernelChoices& kernels, const ProgramOp& op) {
  if (kernels.empty()) return {};
  if (op.kind == OpKind::kGroupedGemm && op.ep > 1) return kernels.ForMoeEp(op.weight_dtype);
  return kernels.For(op.kind, op.kernel_format);
}

namespace program_build {

ProgramOp GemmOp(const Builder& b, std::string id, OpClass cls, const WeightFormat& f, int64_t n,
                 int64_t k, int copies, RowSource rows) {
  ProgramOp op;
  op.id = std::move(id);
  op.kind = OpKind::kGemm;
  op.op_class = cls;
  op.rows = rows;
  op.n = n * copies;
  op.k = k;
  op.copies = copies;
  op.format = f;
  op.weight_dtype = f.dtype;
  // The activations the engines pair with the weights (the row's
  // `activations`): W4A16 runs on BF16 tensor cores after dequantization,
  // FP8 weights W8A8 on FP8 tensor cores, NVFP4 W4A4 on FP4 ones.
  op.compute_dtype = b.facts->Row(f.dtype).activations;
  // INT4 GEMMs carry their group size (kernel tables key W4A16 curves by it).
  op.group_size = b.facts->Row(f.dtype).family == Dtype::kInt4 ? f.group_size : 0;
  op.weight_bytes = copies * static_cast<double>(b.facts->Bytes(f.dtype, n * k) +
                                                 TensorScaleBytes(*b.facts, f, n, k));
  op.kernel_format = f.dtype;
  return op;
}

ProgramOp ElementwiseOp(std::string id, RowSource rows, double in, double out, double flops) {
  ProgramOp op;
  op.id = std::move(id);
  op.kind = OpKind::kElementwise;
  op.op_class = OpClass::kElementwise;
  op.rows = rows;
  op.in_per_row = in;
  op.out_per_row = out;
  op.flops_per_row = flops;
  return op;
}

ProgramOp CollectiveOp(OpKind kind, std::string id, int participants, RowSource rows,
                       double message_per_row) {
  ProgramOp op;
  op.id = std::move(id);
  op.kind = kind;
  op.op_class = OpClass::kCommunication;
  op.rows = rows;
  op.participants = participants;
  op.message_bytes_per_row = message_per_row;
  return op;
}

namespace {

// Embedding gather (vocab-parallel: each rank gathers its rows, then the
// partial rows are all-reduced).
void AddPrologue(const Builder& b) {
  ProgramOp op;
  op.id = op_ids::kEmbedTokens;
  op.kind = OpKind::kEmbedding;
  op.op_class = OpClass::kOverhead;
  op.section = ProgramSection::kPrologue;
  op.rows = RowSource::kAttnTokens;
  op.bytes_per_row = 2.0 * b.h * b.a;
  op.tensors = {op_ids::kEmbedTokens};
  b.p->prologue.push_back(std::move(op));
  if (b.attn_tp > 1) {
    b.p->prologue.push_back(CollectiveOp(OpKind::kAllReduce, op_ids::kEmbedAllReduce, b.attn_tp,
                                         RowSource::kAttnTokens, double(b.h) * b.a));
    b.p->prologue.back().section = ProgramSection::kPrologue;
  }
}

// The tokens an MoE layer's router and shared experts see on this GPU: every
// attention rank's (gathered), or under DeepEP each rank's own (SGLang runs
// sparse layers SCATTERED with DeepEP: LayerScatterModes._compute_ffn_mode,
// sgl-project/sglang python/sglang/srt/layers/communicator.py).
RowSource MoeLayerRows(const ParallelLayout& l) {
  return l.expert.all_to_all == MoeAllToAll::kDeepEp ? RowSource::kFfnTokensPerTp
                                                     : RowSource::kFfnTokens;
}

// The tokens a dense FFN layer runs on: every attention rank's (gathered
// for the whole TP group), or the rank's own where the engine keeps the
// dense layers on each DP rank.
RowSource DenseLayerRows(const ParallelLayout& l) {
  return l.DenseFfnOnAttentionRanks() ? RowSource::kAttnTokens : RowSource::kFfnTokens;
}

// The layers whose FFN gathers every DP rank's tokens: all of them, less
// the MoE layers under DeepEP (each rank keeps its own tokens) and the dense
// layers an engine keeps on each DP rank; none when both hold.
std::optional<LayerFilter::Ffn> DpGatherLayers(const ParallelLayout& l) {
  const bool moe = l.expert.all_to_all != MoeAllToAll::kDeepEp;
  const bool dense = !l.DenseFfnOnAttentionRanks();
  if (moe && dense) return LayerFilter::Ffn::kAny;
  if (moe) return LayerFilter::Ffn::kMoe;
  if (dense) return LayerFilter::Ffn::kDense;
  return std::nullopt;
}

// Dense FFN layers and the shared experts: gate+up fused, SiLU-and-mul, down.
void AddDenseFfns(const Builder& b, const std::vector<WeightTensor>& tensors) {
  const ModelCard& card = b.m->card;
  const RowSource moe_rows = MoeLayerRows(b.m->layout);
  for (const WeightTensor& t : tensors) {
    if (t.component != Component::kDenseFfn && t.component != Component::kSharedExperts) continue;
    const LocalShape s = ShardTensor(card, t, b.m->layout);
    const bool dense = t.component == Component::kDenseFfn;
    const int64_t layers = dense ? card.NumDenseLayers() : card.NumMoeLayers();
    // A model slice can hold no layer of this kind (an engine run of fewer
    // layers than the card's leading dense ones): then it has no such ops.
    if (layers == 0) continue;
    const int copies = static_cast<int>(s.count / layers);  // 2 for gate+up, x shared experts
    const LayerFilter::Ffn ffn = dense ? LayerFilter::Ffn::kDense : LayerFilter::Ffn::kMoe;
    const RowSource rows = dense ? DenseLayerRows(b.m->layout) : moe_rows;
    ProgramOp op = GemmOp(b, t.name, dense ? OpClass::kDenseGemm : OpClass::kMoe,
                          b.m->formats.at(t.component), s.n, s.k, copies, rows);
    op.filter.ffn = ffn;
    op.tensors = {t.name};
    b.p->layer_ops.push_back(std::move(op));
    if (std::string_view(t.name).ends_with("gate_up_proj")) {
      const double f_local = double(s.n) * copies / 2;
      ProgramOp act = ElementwiseOp(dense ? op_ids::kDenseSiluAndMul : op_ids::kSharedSiluAndMul,
                                    rows, 2.0 * f_local, f_local, 4.0 * f_local);
      act.filter.ffn = ffn;
      b.p->layer_ops.push_back(std::move(act));
    }
  }
}

// The routed-expert block of every MoE layer: the router GEMM, then the
// engines' fused MoE layer as one op -- top-k, the token sort, both grouped
// GEMMs with the activation between them, and the weighted combine -- which
// is what a fused-MoE kernel implementation runs and what its measurements
// time (MEASUREMENTS.md: touched experts' weights plus every row's input and
// output, and the FLOPs of the gate, up and down products); EP dispatch and
// combine around it.
void AddMoe(const Builder& b, const std::vector<WeightTensor>& tensors) {
  const ModelCard& card = b.m->card;
  const int E = card.n_routed_experts;
  const int ep = std::max(1, b.m->layout.ep);
  auto moe = [&](ProgramOp op) {
    op.filter.ffn = LayerFilter::Ffn::kMoe;
    b.p->layer_ops.push_back(std::move(op));
  };
  ProgramOp gate = GemmOp(b, op_ids::kMoeGate, OpClass::kMoe, b.m->formats.at(Component::kRouter),
                          E, b.h, 1, MoeLayerRows(b.m->layout));
  gate.kind = OpKind::kRouter;
  gate.tensors = {op_ids::kMoeGate};
  moe(std::move(gate));
  // Dispatch: each of this GPU's tokens goes to its k experts; the share
  // bound for other EP ranks leaves the GPU. Combine returns as much. Only
  // DeepEP exchanges tokens so: without it every EP rank already holds every
  // token (TP attention's all-reduce, or DP attention's gather), runs its
  // own experts on them and the FFN's all-reduce (reduce-scatter) sums the
  // ranks' parts -- vLLM runs all-to-all kernels only with data parallelism
  // (vllm/model_executor/layers/fused_moe/config.py use_all2all_kernels:
  // dp_size > 1 and use_ep), SGLang only with a --moe-a2a-backend.
  const double msg = double(card.experts_per_token) * b.h * b.a;
  const bool exchange = ep > 1 && b.m->layout.expert.all_to_all == MoeAllToAll::kDeepEp;
  if (exchange) {
    moe(CollectiveOp(OpKind::kAllToAll, op_ids::kMoeDispatch, ep, RowSource::kFfnTokensPerTp, msg));
  }
  const WeightFormat& f = b.m->formats.at(Component::kExperts);
  double w_expert = 0, width = 0;  // one expert's bytes; summed output width (gate+up+down)
  for (const WeightTensor& t : tensors) {
    if (t.component != Component::kExperts || t.is_norm_vector) continue;  // biases: no GEMM
    const LocalShape s = ShardTensor(card, t, b.m->layout);
    const int copies = static_cast<int>(t.count / (int64_t{E} * card.NumMoeLayers()));
    w_expert += copies * double(b.facts->Bytes(f.dtype, s.n * s.k) +
                                TensorScaleBytes(*b.facts, f, s.n, s.k));
    width += double(copies) * s.n * s.k / b.h;
  }
  ProgramOp op = GemmOp(b, op_ids::kMoeExperts, OpClass::kMoe, f, 0, b.h, 1, RowSource::kFfnTokens);
  op.kind = OpKind::kGroupedGemm;
  op.tensors = {tensor_names::kExpertsGateUpProj, tensor_names::kExpertsDownProj};
  op.n = static_cast<int64_t>(std::llround(width));
  op.weight_bytes = w_expert;
  op.expert_width = width;
  op.experts = E;
  op.experts_per_rank = E / ep;
  op.top_k = card.experts_per_token;
  op.ep = ep;
  moe(std::move(op));
  if (exchange) {
    moe(CollectiveOp(OpKind::kAllToAll, op_ids::kMoeCombine, ep, RowSource::kFfnTokensPerTp, msg));
  }
}

// Attention output: all-reduce inside the attention TP group; with DP
// attention the FFN's TP group then gathers every rank's tokens. Then the
// residual add + post-attention RMSNorm (read x and residual, write both).
void AddAttentionOutput(const Builder& b) {
  const double row = double(b.h) * b.a;
  if (b.attn_tp > 1) {
    b.p->layer_ops.push_back(CollectiveOp(OpKind::kAllReduce, op_ids::kAttnAllReduce, b.attn_tp,
                                          RowSource::kAttnTokens, row));
  }
  const std::optional<LayerFilter::Ffn> gathered = DpGatherLayers(b.m->layout);
  if (b.dp > 1 && gathered) {
    ProgramOp gather =
        CollectiveOp(OpKind::kAllGather, op_ids::kDpAllGather, b.tp, RowSource::kFfnTokens, row);
    gather.filter.ffn = *gathered;
    b.p->layer_ops.push_back(std::move(gather));
  }
  auto norm = [&](RowSource rows, LayerFilter::Ffn ffn) {
    ProgramOp op = ElementwiseOp(op_ids::kNormPostAttention, rows, 2.0 * b.h, 2.0 * b.h, 5.0 * b.h);
    op.filter.ffn = ffn;
    op.tensors = {op_ids::kNormPostAttention};
    b.p->layer_ops.push_back(std::move(op));
  };
  // The norm runs where the FFN's input is: on the gathered tokens, or
  // under DeepEP in MoE layers on each rank's own (SCATTERED: the layer
  // norm before any gather, communicator.py's prepare_mlp), or in dense
  // layers kept on each DP rank on its own.
  const RowSource dense = DenseLayerRows(b.m->layout), moe = MoeLayerRows(b.m->layout);
  if (dense == moe) {
    norm(dense, LayerFilter::Ffn::kAny);
  } else {
    norm(dense, LayerFilter::Ffn::kDense);
    norm(moe, LayerFilter::Ffn::kMoe);
  }
}

// FFN output: all-reduce over TP, or reduce-scatter back to the attention
// ranks with DP attention; then the residual add.
void AddFfnOutput(const Builder& b) {
  const double row = double(b.h) * b.a;
  if (b.dp > 1) {
    const std::optional<LayerFilter::Ffn> gathered = DpGatherLayers(b.m->layout);
    if (gathered) {
      ProgramOp scatter = CollectiveOp(OpKind::kReduceScatter, op_ids::kDpReduceScatter, b.tp,
                                       RowSource::kFfnTokens, row);
      scatter.filter.ffn = *gathered;
      b.p->layer_ops.push_back(std::move(scatter));
    }
    // Dense layers on each DP rank sum their attention TP group's shards.
    if (b.m->layout.DenseFfnOnAttentionRanks() && b.attn_tp > 1) {
      ProgramOp reduce = CollectiveOp(OpKind::kAllReduce, op_ids::kDenseAllReduce, b.attn_tp,
                                      RowSource::kAttnTokens, row);
      reduce.filter.ffn = LayerFilter::Ffn::kDense;
      b.p->layer_ops.push_back(std::move(reduce));
    }
  } else if (b.tp > 1) {
    b.p->layer_ops.push_back(
        CollectiveOp(OpKind::kAllReduce, op_ids::kFfnAllReduce, b.tp, RowSource::kAttnTokens, row));
  }
  b.p->layer_ops.push_back(ElementwiseOp(op_ids::kNormResidual, RowSource::kAttnTokens, 2.0 * b.h,
                                         double(b.h), double(b.h)));
}

// Final norm, LM head on the rows that need logits (each decode request and
// the last token of each prefill chunk), logits all-gather, sampling.
void AddEpilogue(const Builder& b, const std::vector<WeightTensor>& tensors) {
  const ModelCard& card = b.m->card;
  std::vector<ProgramOp>& out = b.p->epilogue;
  out.push_back(ElementwiseOp(op_ids::kNormFinal, RowSource::kLogitRows, double(b.h), double(b.h),
                              4.0 * b.h));
  out.back().tensors = {op_ids::kNormFinal};
  for (const WeightTensor& t : tensors) {
    const bool head =
        std::string_view(t.name) == op_ids::kLmHead ||
        (card.tie_word_embeddings && std::string_view(t.name) == op_ids::kEmbedTokens);
    if (!head) continue;
    const LocalShape s = ShardTensor(card, t, b.m->layout);
    out.push_back(GemmOp(b, op_ids::kLmHead, OpClass::kDenseGemm,
                         b.m->formats.at(Component::kEmbeddings), s.n, s.k, 1,
                         RowSource::kLogitRows));
    out.back().tensors = {t.name};  // embed_tokens when tied
    if (const int head_tp = b.m->layout.LmHeadTp(); head_tp > 1) {
      out.push_back(CollectiveOp(OpKind::kAllGather, op_ids::kLogitsAllGather, head_tp,
                                 RowSource::kLogitRows, double(card.vocab_size) * b.a));
    }
  }
  ProgramOp sample;
  sample.id = op_ids::kSampling;
  sample.kind = OpKind::kSampling;
  sample.op_class = OpClass::kOverhead;
  sample.rows = RowSource::kLogitRows;
  sample.bytes_per_row = double(card.vocab_size) * b.facts->Bytes(Dtype::kFp32, 1);
  sample.flops_per_row = 5.0 * card.vocab_size;  // softmax: max, sub, exp, sum, div
  out.push_back(std::move(sample));
  for (ProgramOp& op : out) op.section = ProgramSection::kEpilogue;
}

bool MixerMatches(LayerFilter::Mixer want, LayerMixer layer) {
  using Mixer = LayerFilter::Mixer;
  switch (want) {
    case Mixer::kAny: return true;
    case Mixer::kSoftmax: return layer != LayerMixer::kLinear;
    case Mixer::kFull: return layer == LayerMixer::kFull;
    case Mixer::kWindow: return layer == LayerMixer::kWindow;
    case Mixer::kLinear: return layer == LayerMixer::kLinear;
  }
  return false;
}

// The group-name suffix of a layer's mixer; none when every layer is full.
const char* MixerSuffix(const ModelCard& card, int l) {
  if (!card.HasMixedLayers()) return "";
  switch (card.MixerOf(l)) {
    case LayerMixer::kFull: return ".full_attention";
    case LayerMixer::kLinear: return ".linear_attention";
    case LayerMixer::kWindow:
      return card.local_attention == LocalAttention::kChunked ? ".chunked_local"
                                                              : ".sliding_window";
  }
  return "";
}

// Layers group by what they run: their FFN (dense or MoE), with a DSA
// indexer whether they compute a fresh top-k (IndexShare reuses one), and
// their token mixer (full, window-limited or linear attention).
void GroupLayers(const ModelCard& card, LayerProgram* p) {
  const int every = std::max(1, card.index_share_every);
  auto matches = [&](const LayerFilter& f, int l) {
    const bool moe = card.IsMoe() && l >= card.NumDenseLayers();
    if (f.ffn == LayerFilter::Ffn::kDense && moe) return false;
    if (f.ffn == LayerFilter::Ffn::kMoe && !moe) return false;
    if (!MixerMatches(f.mixer, card.MixerOf(l))) return false;
    return !f.index_fresh_only || l % every == 0;
  };
  for (ProgramOp& op : p->layer_ops) op.layers = 0;
  for (int l = 0; l < p->num_layers; ++l) {
    const bool moe = card.IsMoe() && l >= card.NumDenseLayers();
    std::string name = moe ? "moe" : "dense";
    if (card.index_topk > 0) name += l % every == 0 ? ".index_fresh" : ".index_shared";
    name += MixerSuffix(card, l);
    auto it = std::find_if(p->groups.begin(), p->groups.end(),
                           [&](const LayerGroup& g) { return g.name == name; });
    if (it == p->groups.end()) {
      LayerGroup g;
      g.name = name;
      g.moe = moe;
      g.index_fresh = card.index_topk > 0 && l % every == 0;
      g.mixer = card.MixerOf(l);
      for (int i = 0; i < static_cast<int>(p->layer_ops.size()); ++i) {
        if (matches(p->layer_ops[i].filter, l)) g.ops.push_back(i);
      }
      p->groups.push_back(std::move(g));
      it = p->groups.end() - 1;
    }
    it->layers.push_back(l);
    for (int i : it->ops) ++p->layer_ops[i].layers;
  }
}

}  // namespace
}  // namespace program_build

Result<LayerProgram> BuildLayerProgram(const ShardedModel& model) {
  using namespace program_build;  // NOLINT: this file's own builders
  CAPPLAN_ASSIGN_OR_RETURN(const DtypeFacts* facts, GetDtypeFacts());
  const ParallelLayout& l = model.layout;
  LayerProgram p;
  p.num_layers = model.card.num_layers;
  p.hidden = model.card.hidden_size;
  p.act_bytes = facts->Bytes(Dtype::kBf16, 1);
  const Builder b{&model, facts, &p, p.hidden, p.act_bytes, l.AttentionTp(), l.AttentionRanks(),
                  l.tp};
  const std::vector<WeightTensor> tensors = ListWeightTensors(model.card);
  AddPrologue(b);
  // RMSNorm: read x and write y (~4 FLOPs per element).
  p.layer_ops.push_back(ElementwiseOp(op_ids::kNormInput, RowSource::kAttnTokens, double(b.h),
                                      double(b.h), 4.0 * b.h));
  p.layer_ops.back().tensors = {op_ids::kNormInput};
  AddLinearAttention(b, tensors);
  AddAttention(b, tensors);
  AddAttentionOutput(b);
  AddDenseFfns(b, tensors);
  if (model.card.IsMoe() && model.card.NumMoeLayers() > 0) AddMoe(b, tensors);
  AddFfnOutput(b);
  AddEpilogue(b, tensors);
  for (ProgramOp& op : p.layer_ops) op.section = ProgramSection::kLayer;
  GroupLayers(model.card, &p);
  return p;
}

}  // namespace capplan::models
