// CUDA: paged attention for decode (MHA/GQA, MLA absorbed, DSA top-k) and
// chunked causal prefill, BF16 or FP8 KV, page sizes 16 and 64 (any size
// works: the page table is read per token).
//
// What it computes: attention.h (same problem struct as the CPU reference
// PagedAttentionCpu in attention_cpu.cc, which the GPU tests compare with).
//
// How (version 1: readable, CUDA cores only):
//   * grid = (num_splits, kv_heads * head_tiles, rows), 128 threads. One CTA
//     owns one KV head and up to 16 of the query heads that share it (the
//     whole GQA group for group <= 16), so each KV byte is read once per
//     CTA instead of once per query head (as FlashInfer's tensor-core GQA
//     decode does: https://flashinfer.ai/2024/02/02/introduce-flashinfer.html).
//     MLA with 64-128 heads per rank uses 4-8 head tiles, each re-reading the latent (L2
//     absorbs part of it); a tensor-core MLA kernel would keep all heads in
//     one CTA (deepseek-ai/FlashMLA README.md).
//   * split-KV (flash-decoding): when rows * kv_heads * head_tiles CTAs
//     cannot fill ~2 per SM, the tokens are split and a combine kernel merges
//     the partial (output, log-sum-exp) pairs. The plan is made on the host.
//   * per 16-token tile: page-table lookups into shared memory, then K (and
//     V) widened ONCE into a float shared-memory tile (FlashInfer's FP8 KV
//     lesson, https://github.com/flashinfer-ai/flashinfer/pull/3485: widen per tile, not per
//     fragment); scores, online
//     softmax in base 2, and the output accumulator in shared memory.
//   * FP8: k_scale folded into the softmax scale, v_scale applied once at
//     the end.
// Bytes (decode): KV = sum_rows ctx * kv_heads * (k_dim + v_dim) * elem
// (MLA: ctx * 576 * elem), plus q, out, page table. FLOPs = 2 * sum ctx *
// q_heads * (k_dim + v_dim). Roofline aimed at: HBM for GQA (target >= 75%
// of measured copy at ctx >= 4k); this FMA version with
// scalar 1-2 byte loads will fall short of it, and MLA with many heads is
// bound by FP32 FMA throughput (~67 TFLOP/s, not the 989 BF16 tensor rate).
// Prefill rows re-read their prefix per query token (no query tiling): a
// correctness reference for chunked prefill, far from FA2-class speed.
//
// Run: `ctest -L gpu -R PagedAttentionGpu` or
// `capplan-kernel-bench --suite paged_decode_attention --suite mla_decode`.
#include <algorithm>
#include <cmath>

#include "kernels/attention/attention_cuda.h"
#include "kernels/formats/bf16.h"
#include "kernels/formats/fp8.h"
#include "kernels/harness/cuda_timer.h"

namespace capplan::kernels {

namespace {

constexpr int kTile = 16;      // tokens per shared-memory tile
constexpr int kHeadTile = 16;  // query heads per CTA
constexpr int kThreads = 128;
constexpr float kLog2e = 1.4426950408889634f;

template <typename KvT>
__device__ __forceinline__ float Widen(KvT x);
template <>
__device__ __forceinline__ float Widen<uint16_t>(uint16_t x) {
  return Bf16BitsToFloat(x);
}
template <>
__device__ __forceinline__ float Widen<uint8_t>(uint8_t x) {
  return Fp8E4m3ToFloat(x);
}

struct KernelArgs {
  AttentionProblem p;
  AttentionRows r;
  const uint16_t* q;
  const void* k;
  const void* v;
  uint16_t* out;
  float* part_o;    // [splits, rows, q_heads, v_dim]
  float* part_lse;  // [splits, rows, q_heads], base 2
  int num_splits;
  int split_tokens;
  int head_tiles;
  int row_base;  // first row of this launch (rows beyond grid.z's limit)
};

// gridDim.z is at most 65535: longer row lists (prefill chunks) launch in
// slices of rows.
constexpr int kMaxGridZ = 65535;

size_t SmemFloats(const AttentionProblem& p) {
  return static_cast<size_t>(kHeadTile) * p.k_dim                         // q
         + static_cast<size_t>(kTile) * (p.k_dim + 1)                     // K tile (padded)
         + (p.v_from_k ? 0 : static_cast<size_t>(kTile) * (p.v_dim + 1))  // V tile
         + static_cast<size_t>(kHeadTile) * p.v_dim                       // accumulator
         + kHeadTile * kTile + 3 * kHeadTile;                             // scores, m, l, alpha
}

// One CTA's share of the problem: one row, one KV head and up to kHeadTile
// of the query heads sharing it, one split's range of the row's tokens.
struct CtaWork {
  int row, seq, ctx;
  int kvh, h0, nh;  // KV head; first query head and how many
  int split, t_begin, t_end;
};

__device__ __forceinline__ CtaWork LocateCta(const KernelArgs& a) {
  const AttentionProblem& p = a.p;
  CtaWork w;
  w.split = blockIdx.x;
  w.kvh = blockIdx.y / a.head_tiles;
  const int ht = blockIdx.y % a.head_tiles;
  w.row = a.row_base + static_cast<int>(blockIdx.z);
  const int g = p.q_heads / p.kv_heads;
  w.h0 = w.kvh * g + ht * kHeadTile;
  w.nh = min(kHeadTile, g - ht * kHeadTile);
  w.seq = a.r.row_seq[w.row];
  w.ctx = a.r.row_ctx[w.row];
  const int n_tok = p.topk > 0 ? p.topk : w.ctx;
  w.t_begin = w.split * a.split_tokens;
  w.t_end = min(n_tok, w.t_begin + a.split_tokens);
  return w;
}

// The dynamic shared memory, carved in SmemFloats' order. K and V tile rows
// are padded by one float (ks, vs) against bank conflicts.
struct Smem {
  float* q;      // [kHeadTile, k_dim] the CTA's queries, widened
  float* k;      // [kTile, ks]
  float* v;      // [kTile, vs]; empty when v_from_k
  float* acc;    // [kHeadTile, v_dim] output accumulator
  float* score;  // [kHeadTile, kTile] scores, then their exponentials
  float* m;      // [kHeadTile] running max (base 2)
  float* l;      // [kHeadTile] running sum
  float* alpha;  // [kHeadTile] the tile's rescale of acc
  int ks, vs;
};

__device__ __forceinline__ Smem CarveSmem(const AttentionProblem& p, float* smem) {
  Smem s;
  s.ks = p.k_dim + 1;
  s.vs = p.v_dim + 1;
  s.q = smem;
  s.k = s.q + kHeadTile * p.k_dim;
  s.v = s.k + kTile * s.ks;
  s.acc = s.v + (p.v_from_k ? 0 : kTile * s.vs);
  s.score = s.acc + kHeadTile * p.v_dim;
  s.m = s.score + kHeadTile * kTile;
  s.l = s.m + kHeadTile;
  s.alpha = s.l + kHeadTile;
  return s;
}

__device__ __forceinline__ void LoadQueriesAndResetState(const KernelArgs& a, const CtaWork& w,
                                                         const Smem& s) {
  const AttentionProblem& p = a.p;
  const int tid = threadIdx.x;
  for (int i = tid; i < w.nh * p.k_dim; i += kThreads) {
    s.q[i] = Bf16BitsToFloat(a.q[(static_cast<size_t>(w.row) * p.q_heads + w.h0) * p.k_dim + i]);
  }
  for (int i = tid; i < w.nh * p.v_dim; i += kThreads) s.acc[i] = 0.0f;
  if (tid < kHeadTile) {
    s.m[tid] = -INFINITY;
    s.l[tid] = 0.0f;
  }
}

// Page-table lookups of the tile's tokens (a DSA row's from its top-k list):
// base_s[t] = (page * page_size + slot) * kv_heads + kvh, or -1 for a token
// outside the tile, the row's context or the list.
__device__ __forceinline__ void LookUpTileSlots(const KernelArgs& a, const CtaWork& w, int t0,
                                                int nt, long long* base_s) {
  const AttentionProblem& p = a.p;
  const int tid = threadIdx.x;
  if (tid >= kTile) return;
  long long base = -1;
  if (tid < nt) {
    int pos = p.topk > 0 ? a.r.topk_idx[static_cast<size_t>(w.row) * p.topk + t0 + tid] : t0 + tid;
    if (pos >= 0 && pos < w.ctx) {
      const int page = a.r.page_table[static_cast<size_t>(w.seq) * p.max_pages + pos / p.page_size];
      base = (static_cast<long long>(page) * p.page_size + pos % p.page_size) * p.kv_heads + w.kvh;
    }
  }
  base_s[tid] = base;
}

// Widen the tile once into shared memory (zeros for missing tokens).
template <typename KvT>
__device__ __forceinline__ void WidenKvTile(const KernelArgs& a, const long long* base_s,
                                            const Smem& s) {
  const AttentionProblem& p = a.p;
  const int tid = threadIdx.x;
  const KvT* K = static_cast<const KvT*>(a.k);
  const KvT* V = static_cast<const KvT*>(p.v_from_k ? a.k : a.v);
  const int v_stride = p.v_from_k ? p.k_dim : p.v_dim;
  for (int i = tid; i < kTile * p.k_dim; i += kThreads) {
    const int t = i / p.k_dim, d = i - t * p.k_dim;
    const long long b = base_s[t];
    s.k[t * s.ks + d] = b >= 0 ? Widen<KvT>(K[b * p.k_dim + d]) : 0.0f;
  }
  if (p.v_from_k) return;
  for (int i = tid; i < kTile * p.v_dim; i += kThreads) {
    const int t = i / p.v_dim, d = i - t * p.v_dim;
    const long long b = base_s[t];
    s.v[t * s.vs + d] = b >= 0 ? Widen<KvT>(V[b * v_stride + d]) : 0.0f;
  }
}

// s[h, t] = q_h . k_t * sm_scale * k_scale * log2(e); -inf for a missing
// token or an idle head slot.
__device__ __forceinline__ void ScoreTile(const AttentionProblem& p, int nh, float scale_log2,
                                          const long long* base_s, const Smem& s) {
  for (int i = threadIdx.x; i < kHeadTile * kTile; i += kThreads) {
    const int hh = i / kTile, t = i - hh * kTile;
    float sc = -INFINITY;
    if (hh < nh && base_s[t] >= 0) {
      const float* qh = s.q + hh * p.k_dim;
      const float* kt = s.k + t * s.ks;
      float dot = 0.0f;
      for (int d = 0; d < p.k_dim; ++d) dot = fmaf(qh[d], kt[d], dot);
      sc = dot * scale_log2;
    }
    s.score[i] = sc;
  }
}

// Online softmax, one thread per head: the new running max, the scores
// turned into exponentials, the running sum and acc's rescale alpha.
__device__ __forceinline__ void OnlineSoftmaxTile(int nh, const Smem& s) {
  const int tid = threadIdx.x;
  if (tid >= nh) return;
  const float m_old = s.m[tid];
  float mx = m_old;
  for (int t = 0; t < kTile; ++t) mx = fmaxf(mx, s.score[tid * kTile + t]);
  if (mx == -INFINITY) {
    s.alpha[tid] = 1.0f;
    for (int t = 0; t < kTile; ++t) s.score[tid * kTile + t] = 0.0f;
    return;
  }
  const float alpha = exp2f(m_old - mx);  // 0 when m_old = -inf
  float sum = 0.0f;
  for (int t = 0; t < kTile; ++t) {
    const float e = exp2f(s.score[tid * kTile + t] - mx);
    s.score[tid * kTile + t] = e;
    sum += e;
  }
  s.l[tid] = s.l[tid] * alpha + sum;
  s.m[tid] = mx;
  s.alpha[tid] = alpha;
}

// acc = acc * alpha + sum_t p_t v_t (V is K's latent prefix for MLA).
__device__ __forceinline__ void AccumulateTile(const AttentionProblem& p, int nh, int nt,
                                               const Smem& s) {
  const float* Vs = p.v_from_k ? s.k : s.v;
  const int vss = p.v_from_k ? s.ks : s.vs;
  for (int i = threadIdx.x; i < nh * p.v_dim; i += kThreads) {
    const int hh = i / p.v_dim, d = i - hh * p.v_dim;
    float o = s.acc[i] * s.alpha[hh];
    for (int t = 0; t < nt; ++t) o = fmaf(s.score[hh * kTile + t], Vs[t * vss + d], o);
    s.acc[i] = o;
  }
}

// out = acc / l (x v_scale) as BF16, or with splits the FP32 partial and its
// log-sum-exp (base 2) for CombineKernel.
__device__ __forceinline__ void WriteOutput(const KernelArgs& a, const CtaWork& w, const Smem& s) {
  const AttentionProblem& p = a.p;
  const int tid = threadIdx.x;
  const size_t out_row = (static_cast<size_t>(w.row) * p.q_heads + w.h0) * p.v_dim;
  for (int i = tid; i < w.nh * p.v_dim; i += kThreads) {
    const int hh = i / p.v_dim;
    const float l = s.l[hh];
    const float o = l > 0.0f ? s.acc[i] / l : 0.0f;
    if (a.num_splits == 1) {
      a.out[out_row + i] = FloatToBf16Bits(o * p.v_scale);
    } else {
      a.part_o[static_cast<size_t>(w.split) * p.rows * p.q_heads * p.v_dim + out_row + i] = o;
    }
  }
  if (a.num_splits > 1 && tid < w.nh) {
    const float l = s.l[tid];
    a.part_lse[(static_cast<size_t>(w.split) * p.rows + w.row) * p.q_heads + w.h0 + tid] =
        l > 0.0f ? s.m[tid] + log2f(l) : -INFINITY;
  }
}

template <typename KvT>
__global__ void __launch_bounds__(kThreads) PagedAttentionKernel(KernelArgs a) {
  const AttentionProblem& p = a.p;
  const CtaWork w = LocateCta(a);
  extern __shared__ float smem[];
  const Smem s = CarveSmem(p, smem);
  __shared__ long long base_s[kTile];
  LoadQueriesAndResetState(a, w, s);
  const float scale_log2 = p.sm_scale * p.k_scale * kLog2e;
  for (int t0 = w.t_begin; t0 < w.t_end; t0 += kTile) {
    const int nt = min(kTile, w.t_end - t0);
    __syncthreads();  // the previous tile is fully consumed
    LookUpTileSlots(a, w, t0, nt, base_s);
    __syncthreads();
    WidenKvTile<KvT>(a, base_s, s);
    __syncthreads();
    ScoreTile(p, w.nh, scale_log2, base_s, s);
    __syncthreads();
    OnlineSoftmaxTile(w.nh, s);
    __syncthreads();
    AccumulateTile(p, w.nh, nt, s);
  }
  __syncthreads();
  WriteOutput(a, w, s);
}

// Merges split partials: out = sum_s 2^(lse_s - max) o_s / sum_s 2^(lse_s - max).
__global__ void CombineKernel(AttentionProblem p, int num_splits, const float* __restrict__ part_o,
                              const float* __restrict__ part_lse, uint16_t* __restrict__ out) {
  const int rh = blockIdx.x;  // row * q_heads + head
  const size_t plane = static_cast<size_t>(p.rows) * p.q_heads;
  float mx = -INFINITY;
  for (int s = 0; s < num_splits; ++s) mx = fmaxf(mx, part_lse[s * plane + rh]);
  float den = 0.0f;
  for (int s = 0; s < num_splits; ++s) {
    const float lse = part_lse[s * plane + rh];
    den += lse == -INFINITY ? 0.0f : exp2f(lse - mx);
  }
  for (int d = threadIdx.x; d < p.v_dim; d += blockDim.x) {
    float num = 0.0f;
    for (int s = 0; s < num_splits; ++s) {
      const float lse = part_lse[s * plane + rh];
      if (lse != -INFINITY) num += exp2f(lse - mx) * part_o[(s * plane + rh) * p.v_dim + d];
    }
    out[static_cast<size_t>(rh) * p.v_dim + d] =
        FloatToBf16Bits(den > 0.0f ? num / den * p.v_scale : 0.0f);
  }
}

}  // namespace

AttentionPlan PlanPagedAttention(const AttentionProblem& p, int max_row_tokens, int sm_count) {
  AttentionPlan plan;
  plan.head_tiles = (p.group() + kHeadTile - 1) / kHeadTile;
  const long long ctas = static_cast<long long>(p.rows) * p.kv_heads * plan.head_tiles;
  const long long target = 2LL * std::max(sm_count, 1);
  int splits = 1;
  if (ctas > 0 && ctas < target) splits = static_cast<int>((target + ctas - 1) / ctas);
  const int by_len = std::max(1, (max_row_tokens + 255) / 256);  // >= 256 tokens per split
  splits = std::max(1, std::min({splits, by_len, 64}));
  int per = (std::max(max_row_tokens, 1) + splits - 1) / splits;
  per = (per + kTile - 1) / kTile * kTile;
  plan.num_splits = (std::max(max_row_tokens, 1) + per - 1) / per;
  plan.split_tokens = per;
  plan.workspace_bytes = plan.num_splits > 1 ? static_cast<size_t>(plan.num_splits) * p.rows *
                                                   p.q_heads * (p.v_dim + 1) * sizeof(float)
                                             : 0;
  return plan;
}

Status LaunchPagedAttention(const AttentionProblem& p, const AttentionRows& rows, const Bf16* q,
                            const PagedKvDevice& cache, const AttentionPlan& plan, void* workspace,
                            Bf16* out) {
  CAPPLAN_RETURN_IF_ERROR(p.Validate());
  if (p.rows == 0) return Status::Ok();
  if (plan.num_splits > 1 && workspace == nullptr) {
    return Status::Invalid("LaunchPagedAttention: split plan needs a workspace");
  }
  KernelArgs a{};
  a.p = p;
  a.r = rows;
  a.q = reinterpret_cast<const uint16_t*>(q);
  a.k = cache.k;
  a.v = cache.v;
  a.out = reinterpret_cast<uint16_t*>(out);
  a.num_splits = plan.num_splits;
  a.split_tokens = plan.split_tokens;
  a.head_tiles = plan.head_tiles;
  if (plan.num_splits > 1) {
    a.part_o = static_cast<float*>(workspace);
    a.part_lse = a.part_o + static_cast<size_t>(plan.num_splits) * p.rows * p.q_heads * p.v_dim;
  }
  const size_t smem = SmemFloats(p) * sizeof(float);
  const bool fp8 = p.kv_dtype == KvDtype::kFp8;
  if (smem > 48 * 1024) {
    // Above 48 KB a kernel must opt in; a refusal (more than the device
    // offers) would otherwise surface as a launch error far from its cause.
    const cudaError_t e = fp8 ? cudaFuncSetAttribute(PagedAttentionKernel<uint8_t>,
                                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                     static_cast<int>(smem))
                              : cudaFuncSetAttribute(PagedAttentionKernel<uint16_t>,
                                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                     static_cast<int>(smem));
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return Status::Invalid("LaunchPagedAttention: " + std::to_string(smem) +
                             " B of shared memory refused: " + cudaGetErrorString(e));
    }
  }
  for (int base = 0; base < p.rows; base += kMaxGridZ) {
    a.row_base = base;
    const dim3 grid(plan.num_splits, p.kv_heads * plan.head_tiles,
                    std::min(kMaxGridZ, p.rows - base));
    if (fp8) {
      PagedAttentionKernel<uint8_t><<<grid, kThreads, smem>>>(a);
    } else {
      PagedAttentionKernel<uint16_t><<<grid, kThreads, smem>>>(a);
    }
  }
  CAPPLAN_RETURN_IF_ERROR(CudaLastError("PagedAttentionKernel launch"));
  if (plan.num_splits > 1) {
    CombineKernel<<<p.rows * p.q_heads, 128>>>(p, plan.num_splits, a.part_o, a.part_lse, a.out);
    CAPPLAN_RETURN_IF_ERROR(CudaLastError("CombineKernel launch"));
  }
  return Status::Ok();
}

}  // namespace capplan::kernels
