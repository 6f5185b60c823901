// The Gated DeltaNet block of a hybrid's linear-attention layers in the
// layer program (transformers Qwen3NextGatedDeltaNet; SGLang and vLLM
// qwen3_next.py split it by heads over attention TP): in_proj_qkvz and
// in_proj_ba, the causal depthwise conv over q/k/v, the delta-rule scan --
// one recurrent update per token for decode, the chunked scan for prefill --
// the gated RMSNorm over each value head and out_proj. The shapes are per
// rank; ops_linear_attention.cc turns them and a batch into FLOPs and bytes.
#include <algorithm>
#include <string_view>

#include "models/layer_program_internal.h"

namespace capplan::models::program_build {
namespace {

ProgramOp Linear(ProgramOp op) {
  op.filter.mixer = LayerFilter::Mixer::kLinear;
  return op;
}

ProgramOp StateOp(const char* id, LinearStateOp which, OpPhase phase, const LinearShape& shape,
                  std::string_view tensor) {
  ProgramOp op;
  op.id = id;
  op.tensors = {tensor};
  op.kind = OpKind::kElementwise;
  op.op_class = OpClass::kAttention;
  op.phase = phase;
  op.state_op = which;
  op.linear = shape;
  return Linear(std::move(op));
}

// The GEMM of `name` among the card's tensors at its per-rank shape.
ProgramOp LinearGemm(const Builder& b, const std::vector<WeightTensor>& tensors,
                     std::string_view name) {
  for (const WeightTensor& t : tensors) {
    if (std::string_view(t.name) != name) continue;
    const LocalShape s = ShardTensor(b.m->card, t, b.m->layout);
    ProgramOp op = GemmOp(b, t.name, OpClass::kDenseGemm, b.m->formats.at(t.component), s.n, s.k, 1,
                          RowSource::kAttnTokens);
    op.tensors = {t.name};
    return Linear(std::move(op));
  }
  return Linear(ProgramOp{});  // unreachable: ListWeightTensors lists every one
}

}  // namespace

void AddLinearAttention(const Builder& b, const std::vector<WeightTensor>& tensors) {
  const ModelCard& card = b.m->card;
  if (!card.IsHybridLinear()) return;
  const LinearAttention& la = card.linear_attention;
  const int64_t tp = std::max(1, b.attn_tp);
  LinearShape shape;
  shape.key_heads = la.num_key_heads / tp;
  shape.value_heads = la.num_value_heads / tp;
  shape.key_dim = la.key_head_dim;
  shape.value_dim = la.value_head_dim;
  shape.conv_dim = la.ConvDim() / tp;
  shape.conv_kernel = la.conv_kernel;
  std::vector<ProgramOp>& out = b.p->layer_ops;
  out.push_back(LinearGemm(b, tensors, op_ids::kLinearInProjQkvz));
  out.push_back(LinearGemm(b, tensors, op_ids::kLinearInProjBa));
  out.push_back(StateOp(op_ids::kLinearConv1d, LinearStateOp::kConv, OpPhase::kAlways, shape,
                        op_ids::kLinearConv1d));
  out.push_back(StateOp(op_ids::kLinearRecurrentUpdate, LinearStateOp::kRecurrentUpdate,
                        OpPhase::kDecode, shape, tensor_names::kLinearDtBiasALog));
  out.push_back(StateOp(op_ids::kLinearChunkedDeltaRule, LinearStateOp::kChunkedScan,
                        OpPhase::kPrefill, shape, tensor_names::kLinearDtBiasALog));
  // Gated RMSNorm over each value head: read the output and the gate z,
  // write the normed, gated output (~6 FLOPs per element).
  const double v = double(shape.value_heads) * shape.value_dim;
  ProgramOp norm_gate =
      ElementwiseOp(op_ids::kLinearNormGate, RowSource::kAttnTokens, 2.0 * v, v, 6.0 * v);
  norm_gate.tensors = {tensor_names::kLinearNorm};
  out.push_back(Linear(std::move(norm_gate)));
  out.push_back(LinearGemm(b, tensors, op_ids::kLinearOutProj));
}

}  // namespace capplan::models::program_build
