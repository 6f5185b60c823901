// Attention kernels of one step: KV append, decode and prefill attention
// (GQA, MLA absorbed/non-absorbed), and the DSA indexer. FLOP formulas are in
// the comments; bytes are HBM traffic (KV read, Q read, O written).
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

namespace {

// The fields every attention op sets; callers add FLOPs and bytes.
Op AttentionOp(OpKind kind, const char* name, int64_t count, int64_t batch, int64_t q_tokens,
               int64_t kv_tokens, int heads, int kv_heads, int head_dim, Dtype kv_dtype) {
  Op op;
  op.kind = kind;
  op.op_class = OpClass::kAttention;
  op.name = name;
  op.count = count;
  op.batch = batch;
  op.q_tokens = q_tokens;
  op.kv_tokens = kv_tokens;
  op.heads = heads;
  op.kv_heads = kv_heads;
  op.head_dim = head_dim;
  op.kv_dtype = kv_dtype;
  return op;
}

}  // namespace

bool AbsorbedMlaPrefill(const ShardedModel& m, const BatchShape& batch) {
  if (m.card.attention != AttentionKind::kMla) return false;
  if (m.kernels.For(OpKind::kMlaPrefillAbsorbed, m.kv.dtype).empty()) return false;
  for (const auto& ch : batch.prefill) {
    if (ch.cached_tokens > 0) return true;
  }
  return false;
}

void AppendAttentionOps(const OpBuildContext& c, const BatchShape& batch) {
  const ModelCard& card = c.m->card;
  const KvLayout& kv = c.m->kv;
  const int64_t L = card.num_layers;
  const int attn_tp = std::max(1, c.m->layout.AttentionTp());
  const int heads = card.num_heads / attn_tp;
  // Per-layer KV bytes of one token on this rank.
  const double main_per_layer = static_cast<double>(kv.main_bytes_per_token) / L;
  const double index_per_layer = static_cast<double>(kv.indexer_bytes_per_token) / L;
  // Decode requests, and their query rows (k + 1 each when a speculative
  // step verifies k drafts). KV is read once per request; each query row
  // scores the whole context (the few extra draft keys are ignored).
  const int64_t n_seqs = static_cast<int64_t>(batch.decode_context.size());
  const int64_t q_per = batch.decode_query_tokens;
  const int64_t n_decode = n_seqs * q_per;
  int64_t decode_ctx = 0, decode_ctx_capped = 0;
  for (int64_t ctx : batch.decode_context) {
    decode_ctx += ctx;
    decode_ctx_capped += card.index_topk > 0 ? std::min<int64_t>(ctx, card.index_topk) : ctx;
  }
  const int64_t a = c.act_bytes;

  // KV append: write each new token's cache entry (quantizing when FP8),
  // reading the projected K/V (or latent) once.
  if (c.attn_tokens > 0) {
    Op op;
    op.kind = OpKind::kKvAppend;
    op.op_class = OpClass::kAttention;
    op.name = "attn.kv_append";
    op.count = L;
    op.q_tokens = c.attn_tokens;
    op.kv_dtype = kv.dtype;
    const int64_t src = card.attention == AttentionKind::kMla
                            ? card.kv_lora_rank + card.qk_rope_head_dim
                            : 2 * int64_t{kv.kv_heads_per_rank} * card.head_dim;
    op.bytes = c.attn_tokens * (main_per_layer + index_per_layer + src * a);
    c.out->push_back(std::move(op));
  }

  // DSA indexer: every query scores every cached token with index_n_heads x
  // index_head_dim dot products (2 FLOPs each), then selects the top-k. Only
  // 1 in index_share_every layers computes a fresh top-k (GLM-5.2 IndexShare).
  if (card.index_topk > 0 && c.attn_tokens > 0) {
    const int64_t every = std::max(1, card.index_share_every);
    const int64_t fresh = (L + every - 1) / every;
    double pairs = static_cast<double>(decode_ctx) * q_per;
    double keys_read = static_cast<double>(decode_ctx);
    for (const auto& ch : batch.prefill) {
      pairs += CausalPairs(ch.cached_tokens, ch.new_tokens, 0);
      keys_read += ch.cached_tokens + ch.new_tokens;
    }
    Op op = AttentionOp(OpKind::kDsaIndexer, "attn.indexer", fresh,
                        n_seqs + static_cast<int64_t>(batch.prefill.size()), c.attn_tokens,
                        static_cast<int64_t>(keys_read), card.index_n_heads, 0, card.index_head_dim,
                        c.facts->indexer_key_dtype);
    op.flops = 2.0 * card.index_n_heads * card.index_head_dim * pairs;
    op.bytes = keys_read * index_per_layer +
               c.attn_tokens * static_cast<double>(card.index_n_heads) * card.index_head_dim * a;
    c.out->push_back(std::move(op));
  }

  if (card.attention == AttentionKind::kMla) {
    const int64_t lora = card.kv_lora_rank, rope = card.qk_rope_head_dim;
    if (n_decode > 0) {
      // Absorbed form: q_nope is mapped into the latent space, so each head
      // scores (lora + rope) elements per cached token and accumulates lora
      // elements of the latent as its value: 2*heads*(lora+rope)*ctx +
      // 2*heads*lora*ctx FLOPs. DSA reads only min(ctx, index_topk) tokens.
      Op op = AttentionOp(OpKind::kMlaDecode, "attn.mla_decode", L, n_seqs, n_decode,
                          decode_ctx_capped, heads, 1, static_cast<int>(lora + rope), kv.dtype);
      op.flops = (2.0 * heads * (lora + rope) * decode_ctx_capped +
                  2.0 * heads * lora * decode_ctx_capped) *
                 q_per;
      op.bytes = decode_ctx_capped * main_per_layer +
                 n_decode * static_cast<double>(heads) * (lora + rope) * a +
                 n_decode * static_cast<double>(heads) * lora * a;
      c.out->push_back(std::move(op));
    }
    if (!batch.prefill.empty() && AbsorbedMlaPrefill(*c.m, batch)) {
      // Absorbed form, as decode: every query scores (lora + rope) latent
      // elements per (query, key) pair and accumulates lora of them; the
      // cached and new latents are read from the pool, Q read and O written
      // in the latent space.
      double pairs = 0, kv_tokens = 0, new_tokens = 0;
      for (const auto& ch : batch.prefill) {
        pairs += CausalPairs(ch.cached_tokens, ch.new_tokens, card.index_topk);
        kv_tokens += ch.cached_tokens + ch.new_tokens;
        new_tokens += ch.new_tokens;
      }
      Op op = AttentionOp(OpKind::kMlaPrefillAbsorbed, "attn.mla_prefill", L,
                          static_cast<int64_t>(batch.prefill.size()),
                          static_cast<int64_t>(new_tokens), static_cast<int64_t>(kv_tokens), heads,
                          1, static_cast<int>(lora + rope), kv.dtype);
      op.flops = (2.0 * heads * (lora + rope) + 2.0 * heads * lora) * pairs;
      op.bytes = kv_tokens * main_per_layer + new_tokens * heads * double(lora + rope) * a +
                 new_tokens * heads * double(lora) * a;
      c.out->push_back(std::move(op));
    } else if (!batch.prefill.empty()) {
      // Non-absorbed form: kv_b_proj expands the latents of all (cached + new)
      // tokens into per-head K (nope+rope) and V; attention is then a causal
      // MHA: 2*heads*(qk + v) FLOPs per (query, key) pair.
      const int64_t qk = card.qk_nope_head_dim + rope, v = card.v_head_dim;
      double pairs = 0, kv_tokens = 0, new_tokens = 0, cached = 0;
      for (const auto& ch : batch.prefill) {
        pairs += CausalPairs(ch.cached_tokens, ch.new_tokens, card.index_topk);
        kv_tokens += ch.cached_tokens + ch.new_tokens;
        new_tokens += ch.new_tokens;
        cached += ch.cached_tokens;
      }
      Op op = AttentionOp(OpKind::kMlaPrefill, "attn.mla_prefill", L,
                          static_cast<int64_t>(batch.prefill.size()),
                          static_cast<int64_t>(new_tokens), static_cast<int64_t>(kv_tokens), heads,
                          heads, static_cast<int>(qk), kv.dtype);
      op.flops = 2.0 * heads * (qk + v) * pairs;
      // Cached latents read from the pool, expanded K/V read by the kernel,
      // Q read and O written.
      op.bytes = cached * main_per_layer + kv_tokens * heads * double(qk + v) * a +
                 new_tokens * heads * double(qk + v) * a;
      c.out->push_back(std::move(op));
    }
    return;
  }

  // GQA/MHA: QK^T and PV, 2*head_dim FLOPs each per (query head, key) pair.
  const int kvh = kv.kv_heads_per_rank;
  const int64_t hd = card.head_dim;
  if (n_decode > 0) {
    Op op = AttentionOp(OpKind::kAttentionDecode, "attn.decode", L, n_seqs, n_decode, decode_ctx,
                        heads, kvh, static_cast<int>(hd), kv.dtype);
    op.flops = 4.0 * heads * hd * decode_ctx * q_per;
    op.bytes = decode_ctx * main_per_layer + 2.0 * n_decode * heads * hd * a;
    c.out->push_back(std::move(op));
  }
  if (!batch.prefill.empty()) {
    double pairs = 0, cached = 0, new_tokens = 0;
    for (const auto& ch : batch.prefill) {
      pairs += CausalPairs(ch.cached_tokens, ch.new_tokens, 0);
      cached += ch.cached_tokens;
      new_tokens += ch.new_tokens;
    }
    Op op = AttentionOp(OpKind::kAttentionPrefill, "attn.prefill", L,
                        static_cast<int64_t>(batch.prefill.size()),
                        static_cast<int64_t>(new_tokens), static_cast<int64_t>(cached + new_tokens),
                        heads, kvh, static_cast<int>(hd), kv.dtype);
    op.flops = 4.0 * heads * hd * pairs;
    // Cached K/V from the pool; new K/V, Q read and O written as BF16.
    op.bytes = cached * main_per_layer + new_tokens * (2.0 * kvh * hd + 2.0 * heads * hd) * a;
    c.out->push_back(std::move(op));
  }
}

}  // namespace capplan::models
