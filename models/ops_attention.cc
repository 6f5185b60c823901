// Attention kernels of one step, instantiated from the layer program: KV
// append, decode and prefill attention (GQA, MLA absorbed/non-absorbed), and
// the DSA indexer. FLOP formulas are in the comments; bytes are HBM traffic
// (KV read, Q read, O written).
#include <algorithm>

#include "models/ops_internal.h"

namespace capplan::models {

double CausalPairs(int64_t cached, int64_t n, int64_t cap) {
  // Sum over p = cached+1 .. cached+n of min(p, cap).
  const double a = cached + 1, b = cached + n;
  if (n <= 0) return 0;
  if (cap <= 0 || b <= cap) return (a + b) * n / 2.0;
  if (a > cap) return static_cast<double>(cap) * n;
  const double below = (a + cap) * (cap - a + 1) / 2.0;  // p = a .. cap
  return below + static_cast<double>(cap) * (b - cap);
}

double ChunkedPairs(int64_t cached, int64_t n, int64_t chunk) {
  // Position p (0-based) sees the p % chunk + 1 keys of its chunk so far;
  // sum them one chunk segment at a time.
  double pairs = 0;
  for (int64_t p = cached, end = cached + n; p < end;) {
    const int64_t off = p % chunk, seg = std::min(chunk - off, end - p);
    pairs += double(2 * off + seg + 1) * seg / 2;
    p += seg;
  }
  return pairs;
}

namespace {

// The keys the query at 1-based position `p` sees: all p, the last `window`
// (sliding), or those of its own `window`-token chunk (chunked local).
int64_t KeysSeen(int64_t p, int64_t window, bool chunked) {
  if (window <= 0) return p;
  return chunked ? (p - 1) % window + 1 : std::min(p, window);
}

// The fields every attention op sets; callers add FLOPs and bytes.
Op AttentionOp(const ProgramOp& s, int64_t count, int64_t batch, int64_t q_tokens,
               int64_t kv_tokens) {
  Op op;
  op.kind = s.kind;
  op.op_class = OpClass::kAttention;
  op.name = s.id;
  op.count = count;
  op.batch = batch;
  op.q_tokens = q_tokens;
  op.kv_tokens = kv_tokens;
  op.heads = s.heads;
  op.kv_heads = s.kv_heads;
  op.head_dim = s.head_dim;
  op.kv_dtype = s.kv_dtype;
  return op;
}

// The decode requests: their number, query rows (k + 1 each when a
// speculative step verifies k drafts) and summed contexts. KV is read once
// per request; each query row scores the whole context (the few extra draft
// keys are ignored). DSA reads only min(ctx, index_topk) tokens, a
// window-limited layer the keys its window leaves (KeysSeen).
struct DecodeRows {
  DecodeRows(const BatchShape& b, int64_t cap, bool chunked = false) {
    seqs = static_cast<int64_t>(b.decode_context.size());
    q_per = b.decode_query_tokens;
    rows = seqs * q_per;
    for (int64_t c : b.decode_context) {
      ctx += c;
      ctx_capped += KeysSeen(c, cap, chunked);
    }
  }
  int64_t seqs = 0, q_per = 1, rows = 0, ctx = 0, ctx_capped = 0;
};

// The prefill chunks: (query, key) pairs under a key cap (DSA top-k, a
// sliding window) or within `cap`-token chunks (chunked local attention),
// keys, new and cached tokens, and the cached tokens any new query sees
// (a window-limited layer reads only those from the cache).
struct PrefillRows {
  PrefillRows(const BatchShape& b, int64_t cap, bool chunked = false) {
    for (const auto& ch : b.prefill) {
      const int64_t c = ch.cached_tokens, n = ch.new_tokens;
      pairs += chunked ? ChunkedPairs(c, n, cap) : CausalPairs(c, n, cap);
      kv_tokens += c + n;
      new_tokens += n;
      cached += c;
      // The first new query (position c + 1) sees the most cached keys.
      cached_seen += cap <= 0 ? c : KeysSeen(c + 1, cap, chunked) - 1;
    }
    chunks = static_cast<int64_t>(b.prefill.size());
  }
  double pairs = 0, kv_tokens = 0, new_tokens = 0, cached = 0, cached_seen = 0;
  int64_t chunks = 0;
};

// KV append: write each new token's cache entry, reading the projected K/V
// (or latent) once.
Op KvAppend(const ProgramOp& s, const StepRows& r, int64_t count) {
  Op op = AttentionOp(s, count, 0, r.attn, 0);
  op.bytes = r.attn * s.bytes_per_row;
  return op;
}

// DSA indexer: index_n_heads x index_head_dim dot products (2 FLOPs each)
// per (query, key) pair, every cached key read.
Op Indexer(const ProgramOp& s, const StepRows& r, int64_t count) {
  const DecodeRows d(*r.batch, 0);
  const PrefillRows p(*r.batch, 0);
  const double pairs = static_cast<double>(d.ctx) * d.q_per + p.pairs;
  const double keys_read = static_cast<double>(d.ctx) + p.kv_tokens;
  Op op = AttentionOp(s, count, d.seqs + p.chunks, r.attn, static_cast<int64_t>(keys_read));
  op.flops = 2.0 * s.heads * s.head_dim * pairs;
  op.bytes = keys_read * s.index_bytes_per_token +
             r.attn * static_cast<double>(s.heads) * s.head_dim * r.act_bytes;
  return op;
}

// MLA absorbed decode: q_nope is mapped into the latent space, so each head
// scores (lora + rope) elements per cached token and accumulates lora
// elements of the latent as its value: 2*heads*(lora+rope)*ctx +
// 2*heads*lora*ctx FLOPs.
Op MlaDecode(const ProgramOp& s, const StepRows& r, int64_t count) {
  const DecodeRows d(*r.batch, s.index_topk);
  const int64_t lora = s.kv_lora_rank, rope = s.rope_dim, a = r.act_bytes;
  const int heads = s.heads;
  Op op = AttentionOp(s, count, d.seqs, d.rows, d.ctx_capped);
  op.flops =
      (2.0 * heads * (lora + rope) * d.ctx_capped + 2.0 * heads * lora * d.ctx_capped) * d.q_per;
  op.bytes = d.ctx_capped * s.kv_bytes_per_token +
             d.rows * static_cast<double>(heads) * (lora + rope) * a +
             d.rows * static_cast<double>(heads) * lora * a;
  return op;
}

// MLA prefill, absorbed form (as decode): every query scores (lora + rope)
// latent elements per (query, key) pair and accumulates lora of them; the
// cached and new latents are read from the pool, Q read and O written in
// the latent space.
Op MlaPrefillAbsorbed(const ProgramOp& s, const StepRows& r, int64_t count) {
  const PrefillRows p(*r.batch, s.index_topk);
  const int64_t lora = s.kv_lora_rank, rope = s.rope_dim, a = r.act_bytes;
  const int heads = s.heads;
  Op op = AttentionOp(s, count, p.chunks, static_cast<int64_t>(p.new_tokens),
                      static_cast<int64_t>(p.kv_tokens));
  op.flops = (2.0 * heads * (lora + rope) + 2.0 * heads * lora) * p.pairs;
  op.bytes = p.kv_tokens * s.kv_bytes_per_token + p.new_tokens * heads * double(lora + rope) * a +
             p.new_tokens * heads * double(lora) * a;
  return op;
}

// MLA prefill, expanded form: kv_b_proj expands the latents of all (cached +
// new) tokens into per-head K (nope+rope) and V; attention is then a causal
// MHA: 2*heads*(qk + v) FLOPs per (query, key) pair. Cached latents read
// from the pool, expanded K/V read by the kernel, Q read and O written.
Op MlaPrefillExpanded(const ProgramOp& s, const StepRows& r, int64_t count) {
  const PrefillRows p(*r.batch, s.index_topk);
  const int64_t qk = s.nope_dim + s.rope_dim, v = s.v_head_dim, a = r.act_bytes;
  const int heads = s.heads;
  Op op = AttentionOp(s, count, p.chunks, static_cast<int64_t>(p.new_tokens),
                      static_cast<int64_t>(p.kv_tokens));
  op.flops = 2.0 * heads * (qk + v) * p.pairs;
  op.bytes = p.cached * s.kv_bytes_per_token + p.kv_tokens * heads * double(qk + v) * a +
             p.new_tokens * heads * double(qk + v) * a;
  return op;
}

// GQA/MHA: QK^T and PV, 2*head_dim FLOPs each per (query head, key) pair;
// a window-limited layer over the keys its window leaves.
Op GqaDecode(const ProgramOp& s, const StepRows& r, int64_t count) {
  const DecodeRows d(*r.batch, s.window, s.window_chunked);
  const int64_t hd = s.head_dim;
  Op op = AttentionOp(s, count, d.seqs, d.rows, d.ctx_capped);
  op.flops = 4.0 * s.heads * hd * d.ctx_capped * d.q_per;
  op.bytes = d.ctx_capped * s.kv_bytes_per_token + 2.0 * d.rows * s.heads * hd * r.act_bytes;
  return op;
}

// Cached K/V from the pool (those the window leaves); new K/V, Q read and O
// written as BF16.
Op GqaPrefill(const ProgramOp& s, const StepRows& r, int64_t count) {
  const PrefillRows p(*r.batch, s.window, s.window_chunked);
  const int64_t hd = s.head_dim;
  Op op = AttentionOp(s, count, p.chunks, static_cast<int64_t>(p.new_tokens),
                      static_cast<int64_t>(p.cached_seen + p.new_tokens));
  op.flops = 4.0 * s.heads * hd * p.pairs;
  op.bytes = p.cached_seen * s.kv_bytes_per_token +
             p.new_tokens * (2.0 * s.kv_heads * hd + 2.0 * s.heads * hd) * r.act_bytes;
  return op;
}

}  // namespace

bool AbsorbedMlaPrefill(const ShardedModel& m, const BatchShape& batch) {
  if (m.card.attention != AttentionKind::kMla) return false;
  if (m.mla_prefill_always_absorbed) return true;
  if (m.kernels.For(OpKind::kMlaPrefillAbsorbed, m.kv.dtype).empty()) return false;
  if (batch.prefill.empty()) return false;
  // The engines test the sum over the batch, not each request's prefix.
  int64_t cached = 0;
  for (const auto& ch : batch.prefill) cached += ch.cached_tokens;
  const MlaAbsorbedPrefix& r = m.mla_absorbed_prefix;
  return cached >= r.from && (r.below <= 0 || cached < r.below);
}

void EmitAttention(const ProgramOp& s, const StepRows& r, int64_t count, std::vector<Op>* out) {
  switch (s.kind) {
    case OpKind::kKvAppend: out->push_back(KvAppend(s, r, count)); return;
    case OpKind::kDsaIndexer: out->push_back(Indexer(s, r, count)); return;
    case OpKind::kMlaDecode: out->push_back(MlaDecode(s, r, count)); return;
    case OpKind::kMlaPrefillAbsorbed: out->push_back(MlaPrefillAbsorbed(s, r, count)); return;
    case OpKind::kMlaPrefill: out->push_back(MlaPrefillExpanded(s, r, count)); return;
    case OpKind::kAttentionDecode: out->push_back(GqaDecode(s, r, count)); return;
    case OpKind::kAttentionPrefill: out->push_back(GqaPrefill(s, r, count)); return;
    // The simulator adds the verify batch itself; the other kinds have
    // their own emitters (ops.cc EmitterFor).
    case OpKind::kKvVerify:
    case OpKind::kGemm:
    case OpKind::kGroupedGemm:
    case OpKind::kRouter:
    case OpKind::kAllReduce:
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kAllToAll:
    case OpKind::kElementwise:
    case OpKind::kEmbedding:
    case OpKind::kSampling:
      return;
  }
}

}  // namespace capplan::models
