// Paged attention over the cache of paged_kv.h, one description for every
// variant this project times:
//   * decode MHA/GQA: rows = batch, each row one query token of q_heads
//     heads; q_heads / kv_heads query heads share a KV head;
//   * MLA decode, absorbed form: kv_heads = 1, k_dim = 576 (latent 512 +
//     rope 64), V = first 512 of the K row (v_from_k), 8-128 heads;
//   * DSA (GLM 5.x): as MLA, but each row attends only to a given top-k list
//     of token positions (the indexer's output; -1 entries are padding);
//   * prefill: a chunk of new tokens attending causally to their prefix in
//     the paged cache (the chunk's own K/V already appended): each new token
//     is a row whose context is start + i + 1 (see MakePrefillRows).
// out[row][head][:] = sum_t softmax_t(sm_scale * q.k_t) v_t over the row's
// tokens. FP8 caches: k_scale is folded into the softmax scale and v_scale
// applied once to the output (FlashInfer's wrappers do the same:
// flashinfer-ai/flashinfer flashinfer/decode.py).
//
// Bytes/FLOPs per row (decode): KV bytes = ctx * kv_heads * (k_dim + v_dim)
// * elem (MLA: ctx * 576 * elem), + q/out; FLOPs = 2 * ctx * q_heads *
// (k_dim + v_dim). Intensity is ~q_heads/kv_heads FLOP/byte in BF16, so GQA
// decode is HBM-bound (target: >= 75% of measured copy at ctx >= 4k;
// FlashInfer and FlashMLA reach ~90% of spec HBM) and MLA with many heads is compute-bound.
#ifndef CAPPLAN_KERNELS_ATTENTION_ATTENTION_H_
#define CAPPLAN_KERNELS_ATTENTION_ATTENTION_H_

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "kernels/attention/paged_kv.h"
#include "kernels/formats/bf16.h"

namespace capplan::kernels {

inline constexpr int kMlaLatentDim = 512;  // kv_lora_rank (models/cards/kimi-k2.6.json)
inline constexpr int kMlaRopeDim = 64;     // qk_rope_head_dim (same card)

struct AttentionProblem {
  int rows = 0;
  int q_heads = 0;
  int kv_heads = 0;
  int k_dim = 0;
  int v_dim = 0;          // output width (MLA: 512)
  bool v_from_k = false;  // MLA: V = K row[0:v_dim]
  float sm_scale = 0.0f;  // softmax scale, before folding k_scale
  float k_scale = 1.0f;
  float v_scale = 1.0f;
  int page_size = 16;
  int max_pages = 0;  // page-table row stride
  int topk = 0;       // DSA: tokens listed per row; 0 = all ctx tokens
  KvDtype kv_dtype = KvDtype::kBf16;

  Status Validate() const;
  int group() const { return q_heads / kv_heads; }
};

// Per-row indexing arrays (host pointers for the CPU reference, device
// pointers for the CUDA kernel).
struct AttentionRows {
  const int32_t* row_seq = nullptr;     // [rows] page-table row of each query row
  const int32_t* row_ctx = nullptr;     // [rows] tokens visible to the row
  const int32_t* topk_idx = nullptr;    // [rows, topk] positions, -1 = none; or null
  const int32_t* page_table = nullptr;  // [*, max_pages]
};

// Reference in double precision: q [rows, q_heads, k_dim] BF16, out [rows,
// q_heads, v_dim] float. A row with no visible token outputs zeros.
Status PagedAttentionCpu(const AttentionProblem& p, const AttentionRows& r, const Bf16* q,
                         const HostPagedKv& cache, float* out);

// Prefill rows for one chunk: n new tokens of page-table row `seq` at
// positions start..start+n-1 (causal: row i sees start + i + 1 tokens).
void MakePrefillRows(int seq, int start, int n, std::vector<int32_t>* row_seq,
                     std::vector<int32_t>* row_ctx);

// Napkin math for one problem (see the header comment).
double AttentionBytes(const AttentionProblem& p, const std::vector<int32_t>& row_ctx,
                      int distinct_kv_rows);
double AttentionFlops(const AttentionProblem& p, const std::vector<int32_t>& row_ctx);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_ATTENTION_ATTENTION_H_
