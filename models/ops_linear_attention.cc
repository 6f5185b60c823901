// Gated DeltaNet step ops (ops_linear_attention.h). FLOPs per token and
// value head, key width dk and value width dv. Recurrent form (decode;
// transformers Qwen3NextGatedDeltaNet torch_recurrent_gated_delta_rule):
// S^T k (2 dk dv), the rank-1 update k (beta (v - S^T k))^T (2 dk dv), the
// output S^T q (2 dk dv): 6 dk dv. Chunked form (prefill, chunks of C):
// each token's output from the chunk's incoming state and its share of the
// state update (4 dk dv), the chunk-local attention and WY terms over C keys
// (2 C (dk + dv)), and one state decay per chunk (dk dv).
#include "models/ops_linear_attention.h"

#include <algorithm>
#include <string>

#include "models/dtype_facts.h"
#include "models/weight_tensors.h"

namespace capplan::models {

namespace {

struct Shapes {
  int64_t tokens = 0, decode_seqs = 0, prefill_seqs = 0, prefill_tokens = 0, decode_tokens = 0;
  int64_t key_heads = 0, value_heads = 0, dk = 0, dv = 0, conv_dim = 0, kernel = 0;
  int64_t h = 0, a = 2;
  int64_t layers = 0;
};

Op MakeLinearGemm(const ShardedModel& m, const DtypeFacts& facts, const char* name, int64_t tokens,
                  int64_t n, int64_t k, int64_t layers, int64_t a) {
  const WeightFormat& f = m.formats.at(Component::kAttention);
  Op op;
  op.kind = OpKind::kGemm;
  op.op_class = OpClass::kAttention;
  op.name = name;
  op.count = layers;
  op.m = tokens;
  op.n = n;
  op.k = k;
  op.weight_dtype = f.dtype;
  op.compute_dtype = f.dtype == Dtype::kFp8E4m3 ? Dtype::kFp8E4m3 : Dtype::kBf16;
  op.group_size = f.group_size;
  op.flops = 2.0 * tokens * n * k;
  op.bytes = double(facts.Bytes(f.dtype, n * k) + TensorScaleBytes(facts, f, n, k)) +
             double(tokens) * (n + k) * a;
  return op;
}

Op MakeStateOp(const char* name, int64_t layers, double flops, double bytes) {
  Op op;
  op.kind = OpKind::kElementwise;
  op.op_class = OpClass::kAttention;
  op.name = name;
  op.count = layers;
  op.flops = flops;
  op.bytes = bytes;
  return op;
}

Shapes ShapesOf(const ShardedModel& m, const BatchShape& batch) {
  const LinearAttention& la = m.card.linear_attention;
  const int64_t tp = std::max(1, m.layout.AttentionTp());
  Shapes s;
  s.layers = la.layers;
  s.key_heads = la.num_key_heads / tp;
  s.value_heads = la.num_value_heads / tp;
  s.dk = la.key_head_dim;
  s.dv = la.value_head_dim;
  s.conv_dim = la.ConvDim() / tp;
  s.kernel = la.conv_kernel;
  s.h = m.card.hidden_size;
  s.decode_seqs = static_cast<int64_t>(batch.decode_context.size());
  s.decode_tokens = batch.DecodeTokens();
  for (const auto& ch : batch.prefill) {
    s.prefill_tokens += ch.new_tokens;
    s.prefill_seqs += ch.new_tokens > 0 ? 1 : 0;
  }
  s.tokens = s.decode_tokens + s.prefill_tokens;
  return s;
}

}  // namespace

void AppendLinearAttentionOps(const ShardedModel& m, const BatchShape& batch,
                              const LinearStateFormat& state, std::vector<Op>* out) {
  if (!m.card.IsHybridLinear()) return;
  const DtypeFacts* facts = GetDtypeFacts().value();
  const Shapes s = ShapesOf(m, batch);
  if (s.tokens == 0) return;
  const int64_t a = s.a, L = s.layers;
  const int64_t qkvz = 2 * s.key_heads * s.dk + 2 * s.value_heads * s.dv;
  out->push_back(MakeLinearGemm(m, *facts, "linear_attn.in_proj_qkvz", s.tokens, qkvz, s.h, L, a));
  out->push_back(
      MakeLinearGemm(m, *facts, "linear_attn.in_proj_ba", s.tokens, 2 * s.value_heads, s.h, L, a));
  // Causal depthwise conv: kernel taps per channel per token; each sequence
  // reads and writes its conv state of kernel - 1 steps.
  const int64_t seqs = s.decode_seqs + s.prefill_seqs;
  const double conv_state = double(s.conv_dim) * (s.kernel - 1) * state.conv_bytes;
  out->push_back(MakeStateOp("linear_attn.conv1d", L, 2.0 * s.tokens * s.conv_dim * s.kernel,
                             2.0 * s.tokens * s.conv_dim * a + 2.0 * seqs * conv_state +
                                 double(s.conv_dim) * s.kernel * a));
  const double state_bytes = double(s.value_heads) * s.dk * s.dv * state.ssm_bytes;
  const double io_per_token = double(2 * s.key_heads * s.dk + 2 * s.value_heads * s.dv) * a;
  if (s.decode_tokens > 0) {
    // One recurrent update per token: every sequence's state in and out.
    out->push_back(MakeStateOp("linear_attn.recurrent_update", L,
                               6.0 * s.decode_tokens * s.value_heads * s.dk * s.dv,
                               2.0 * s.decode_seqs * state_bytes + s.decode_tokens * io_per_token));
  }
  if (s.prefill_tokens > 0) {
    // Chunked scan: the state work once per chunk, chunk-local attention per
    // token; the state read once and written once per sequence.
    const double chunks = double(s.prefill_tokens) / kDeltaRuleChunk + s.prefill_seqs;
    const double per_token = 4.0 * s.dk * s.dv + 2.0 * kDeltaRuleChunk * (s.dk + s.dv);
    const double flops = s.value_heads * (s.prefill_tokens * per_token + chunks * s.dk * s.dv);
    out->push_back(MakeStateOp("linear_attn.chunked_delta_rule", L, flops,
                               2.0 * s.prefill_seqs * state_bytes +
                                   s.prefill_tokens * io_per_token));
  }
  // Gated RMSNorm over each value head, then the output projection.
  out->push_back(MakeStateOp("linear_attn.norm_gate", L, 6.0 * s.tokens * s.value_heads * s.dv,
                             3.0 * s.tokens * s.value_heads * s.dv * a));
  out->push_back(MakeLinearGemm(m, *facts, "linear_attn.out_proj", s.tokens, s.h,
                                s.value_heads * s.dv, L, a));
}

}  // namespace capplan::models
