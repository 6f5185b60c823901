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

template <typename KvT>
__global__ void __launch_bounds__(kThreads) PagedAttentionKernel(KernelArgs a) {
  const AttentionProblem& p = a.p;
  const int tid = threadIdx.x;
  const int split = blockIdx.x;
  const int kvh = blockIdx.y / a.head_tiles, ht = blockIdx.y % a.head_tiles;
  const int row = a.row_base + static_cast<int>(blockIdx.z);
  const int g = p.q_heads / p.kv_heads;
  const int h0 = kvh * g + ht * kHeadTile;
  const int nh = min(kHeadTile, g - ht * kHeadTile);
  const int seq = a.r.row_seq[row], ctx = a.r.row_ctx[row];
  const int n_tok = p.topk > 0 ? p.topk : ctx;
  const int t_begin = split * a.split_tokens;
  const int t_end = min(n_tok, t_begin + a.split_tokens);
  const int ks = p.k_dim + 1, vs = p.v_dim + 1;

  extern __shared__ float smem[];
  float* q_s = smem;
  float* k_s = q_s + kHeadTile * p.k_dim;
  float* v_s = k_s + kTile * ks;
  float* acc = v_s + (p.v_from_k ? 0 : kTile * vs);
  float* s_s = acc + kHeadTile * p.v_dim;
  float* m_s = s_s + kHeadTile * kTile;
  float* l_s = m_s + kHeadTile;
  float* a_s = l_s + kHeadTile;
  __shared__ long long base_s[kTile];  // (page * page_size + slot) * kv_heads + kvh, or -1

  for (int i = tid; i < nh * p.k_dim; i += kThreads) {
    q_s[i] = Bf16BitsToFloat(a.q[(static_cast<size_t>(row) * p.q_heads + h0) * p.k_dim + i]);
  }
  for (int i = tid; i < nh * p.v_dim; i += kThreads) acc[i] = 0.0f;
  if (tid < kHeadTile) {
    m_s[tid] = -INFINITY;
    l_s[tid] = 0.0f;
  }
  const float scale_log2 = p.sm_scale * p.k_scale * kLog2e;
  const KvT* K = static_cast<const KvT*>(a.k);
  const KvT* V = static_cast<const KvT*>(p.v_from_k ? a.k : a.v);
  const int v_stride = p.v_from_k ? p.k_dim : p.v_dim;
  const float* Vs = p.v_from_k ? k_s : v_s;
  const int vss = p.v_from_k ? ks : vs;

  for (int t0 = t_begin; t0 < t_end; t0 += kTile) {
    const int nt = min(kTile, t_end - t0);
    __syncthreads();  // the previous tile is fully consumed
    if (tid < kTile) {
      long long base = -1;
      if (tid < nt) {
        int pos =
            p.topk > 0 ? a.r.topk_idx[static_cast<size_t>(row) * p.topk + t0 + tid] : t0 + tid;
        if (pos >= 0 && pos < ctx) {
          const int page =
              a.r.page_table[static_cast<size_t>(seq) * p.max_pages + pos / p.page_size];
          base =
              (static_cast<long long>(page) * p.page_size + pos % p.page_size) * p.kv_heads + kvh;
        }
      }
      base_s[tid] = base;
    }
    __syncthreads();
    // Widen the tile once into shared memory.
    for (int i = tid; i < kTile * p.k_dim; i += kThreads) {
      const int t = i / p.k_dim, d = i - t * p.k_dim;
      const long long b = base_s[t];
      k_s[t * ks + d] = b >= 0 ? Widen<KvT>(K[b * p.k_dim + d]) : 0.0f;
    }
    if (!p.v_from_k) {
      for (int i = tid; i < kTile * p.v_dim; i += kThreads) {
        const int t = i / p.v_dim, d = i - t * p.v_dim;
        const long long b = base_s[t];
        v_s[t * vs + d] = b >= 0 ? Widen<KvT>(V[b * v_stride + d]) : 0.0f;
      }
    }
    __syncthreads();
    for (int i = tid; i < kHeadTile * kTile; i += kThreads) {
      const int hh = i / kTile, t = i - hh * kTile;
      float sc = -INFINITY;
      if (hh < nh && base_s[t] >= 0) {
        const float* qh = q_s + hh * p.k_dim;
        const float* kt = k_s + t * ks;
        float dot = 0.0f;
        for (int d = 0; d < p.k_dim; ++d) dot = fmaf(qh[d], kt[d], dot);
        sc = dot * scale_log2;
      }
      s_s[i] = sc;
    }
    __syncthreads();
    if (tid < nh) {
      const float m_old = m_s[tid];
      float mx = m_old;
      for (int t = 0; t < kTile; ++t) mx = fmaxf(mx, s_s[tid * kTile + t]);
      if (mx == -INFINITY) {
        a_s[tid] = 1.0f;
        for (int t = 0; t < kTile; ++t) s_s[tid * kTile + t] = 0.0f;
      } else {
        const float alpha = exp2f(m_old - mx);  // 0 when m_old = -inf
        float sum = 0.0f;
        for (int t = 0; t < kTile; ++t) {
          const float e = exp2f(s_s[tid * kTile + t] - mx);
          s_s[tid * kTile + t] = e;
          sum += e;
        }
        l_s[tid] = l_s[tid] * alpha + sum;
        m_s[tid] = mx;
        a_s[tid] = alpha;
      }
    }
    __syncthreads();
    for (int i = tid; i < nh * p.v_dim; i += kThreads) {
      const int hh = i / p.v_dim, d = i - hh * p.v_dim;
      float o = acc[i] * a_s[hh];
      for (int t = 0; t < nt; ++t) o = fmaf(s_s[hh * kTile + t], Vs[t * vss + d], o);
      acc[i] = o;
    }
  }
  __syncthreads();
  const size_t out_row = (static_cast<size_t>(row) * p.q_heads + h0) * p.v_dim;
  for (int i = tid; i < nh * p.v_dim; i += kThreads) {
    const int hh = i / p.v_dim;
    const float l = l_s[hh];
    const float o = l > 0.0f ? acc[i] / l : 0.0f;
    if (a.num_splits == 1) {
      a.out[out_row + i] = FloatToBf16Bits(o * p.v_scale);
    } else {
      a.part_o[static_cast<size_t>(split) * p.rows * p.q_heads * p.v_dim + out_row + i] = o;
    }
  }
  if (a.num_splits > 1 && tid < nh) {
    const float l = l_s[tid];
    a.part_lse[(static_cast<size_t>(split) * p.rows + row) * p.q_heads + h0 + tid] =
        l > 0.0f ? m_s[tid] + log2f(l) : -INFINITY;
  }
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
