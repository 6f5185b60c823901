// Gated DeltaNet state ops of one step (ops_linear_attention.h). FLOPs per
// token and value head, key width dk and value width dv. Recurrent form
// (decode; transformers Qwen3NextGatedDeltaNet
// torch_recurrent_gated_delta_rule): S^T k (2 dk dv), the rank-1 update
// k (beta (v - S^T k))^T (2 dk dv), the output S^T q (2 dk dv): 6 dk dv.
// Chunked form (prefill, chunks of C): each token's output from the chunk's
// incoming state and its share of the state update (4 dk dv), the
// chunk-local attention and WY terms over C keys (2 C (dk + dv)), and one
// state decay per chunk (dk dv). The state's element size is the engine's
// (ShardedModel::linear_state).
#include "models/ops_linear_attention.h"

#include "models/ops_internal.h"

namespace capplan::models {

namespace {

// The batch as the linear layers see it: sequences and tokens per phase.
struct LinearRows {
  explicit LinearRows(const BatchShape& b) {
    decode_seqs = static_cast<int64_t>(b.decode_context.size());
    decode_tokens = b.DecodeTokens();
    for (const auto& ch : b.prefill) {
      prefill_tokens += ch.new_tokens;
      prefill_seqs += ch.new_tokens > 0 ? 1 : 0;
    }
  }
  int64_t decode_seqs = 0, decode_tokens = 0, prefill_seqs = 0, prefill_tokens = 0;
};

Op StateInstance(const ProgramOp& s, int64_t count, int64_t seqs, int64_t tokens) {
  Op op;
  op.kind = s.kind;
  op.op_class = s.op_class;
  op.name = s.id;
  op.count = count;
  op.batch = seqs;
  op.q_tokens = tokens;
  return op;
}

}  // namespace

void EmitLinearState(const ProgramOp& s, const StepRows& r, int64_t count, std::vector<Op>* out) {
  const LinearShape& x = s.linear;
  const LinearRows n(*r.batch);
  const LinearStateFormat& f = r.linear_state;
  const int64_t a = r.act_bytes;
  const double state = double(x.value_heads) * x.key_dim * x.value_dim * f.ssm_bytes;
  // q, k (key width each), v and the output (value width each), per token.
  const double io = double(2 * x.key_heads * x.key_dim + 2 * x.value_heads * x.value_dim) * a;
  switch (s.state_op) {
    case LinearStateOp::kConv: {
      // Causal depthwise conv: kernel taps per channel per token; each
      // sequence reads and writes its conv state of kernel - 1 steps.
      const int64_t seqs = n.decode_seqs + n.prefill_seqs;
      const int64_t tokens = n.decode_tokens + n.prefill_tokens;
      const double conv_state = double(x.conv_dim) * (x.conv_kernel - 1) * f.conv_bytes;
      Op op = StateInstance(s, count, seqs, tokens);
      op.flops = 2.0 * tokens * x.conv_dim * x.conv_kernel;
      op.bytes = 2.0 * tokens * x.conv_dim * a + 2.0 * seqs * conv_state +
                 double(x.conv_dim) * x.conv_kernel * a;
      out->push_back(std::move(op));
      return;
    }
    case LinearStateOp::kRecurrentUpdate: {
      // One recurrent update per token: every sequence's state in and out.
      Op op = StateInstance(s, count, n.decode_seqs, n.decode_tokens);
      op.flops = 6.0 * n.decode_tokens * x.value_heads * x.key_dim * x.value_dim;
      op.bytes = 2.0 * n.decode_seqs * state + n.decode_tokens * io;
      out->push_back(std::move(op));
      return;
    }
    case LinearStateOp::kChunkedScan: {
      // The state work once per chunk, chunk-local attention per token; the
      // state read once and written once per sequence.
      const double chunks = double(n.prefill_tokens) / kDeltaRuleChunk + n.prefill_seqs;
      const double per_token =
          4.0 * x.key_dim * x.value_dim + 2.0 * kDeltaRuleChunk * (x.key_dim + x.value_dim);
      Op op = StateInstance(s, count, n.prefill_seqs, n.prefill_tokens);
      op.flops = x.value_heads * (n.prefill_tokens * per_token + chunks * x.key_dim * x.value_dim);
      op.bytes = 2.0 * n.prefill_seqs * state + n.prefill_tokens * io;
      out->push_back(std::move(op));
      return;
    }
    case LinearStateOp::kNone: return;  // not a state op (ops.cc EmitterFor)
  }
}

}  // namespace capplan::models
