// The own GEMM kernel: dense (one group) or grouped (MoE experts), with the
// weight dequantization fused into the main loop: BF16, FP8 e4m3 with
// 128x128 block scales (activations e4m3 with 1x128 scales), or prepacked
// INT4 (W4A16, group 32/128, symmetric or asymmetric).
//
// Structure (the readable "reference rung", gemm_cuda.h): CTA tile 32(M) x 64(N),
// K step 32, 4 warps each owning a 16x32 output piece as two WMMA 16x16x16
// BF16 fragments with FP32 accumulators. Every K step loads the packed
// operands from HBM, widens them to BF16 once per tile into shared memory
// (FlashInfer's lesson: widen per tile, not per fragment,
// https://github.com/flashinfer-ai/flashinfer/pull/3485),
// and feeds the tensor cores. Dequantized weights exist only in shared
// memory, never in HBM.
//
// Bytes/FLOPs per call (DenseGemmCost in gemm_cost.h): 2*M*N*K FLOPs;
// weights N*K*{2, 1, 0.5} bytes + scales, activations M*K*{2,1,2} (+ scales),
// output M*N*2. Each CTA re-reads its activation tile for every N tile
// (served by L2 at these sizes) and its weight tile for every M tile, so at
// M <= 32 weights are read from HBM exactly once.
//
// Why W4A16 must lose to FP8 at large M: both end in BF16 MMAs here, but
// in general W4A16's ceiling is the BF16 tensor rate (989 TFLOPS dense) plus
// per-CTA dequant ALU work repeated for every M tile, while a true FP8 GEMM
// runs at the FP8 rate (1979 TFLOPS) with scales applied once per block
// (H200 dense peaks, NVIDIA datasheet). INT4 only wins when bytes dominate: M <= ~16-64, where
// it moves 4x fewer weight bytes than BF16 and 2x fewer than FP8.
//
// Decode tuning: at M <= 32 one M tile covers the batch, so the grid is
// N/64 CTAs; when that does not fill the SMs twice, the host plan
// (ChooseSplitK) splits K across CTAs and a second kernel sums the FP32
// partials in split order (deterministic, no atomics).
#include <cuda_bf16.h>
#include <mma.h>

#include <algorithm>
#include <string>

#include "kernels/formats/bf16.h"
#include "kernels/formats/fp8.h"
#include "kernels/gemm/gemm_cuda.h"
#include "kernels/gemm/int4_prepack.h"

namespace capplan::kernels {
namespace {

using namespace nvcuda;

constexpr int kBm = 32;
constexpr int kBn = kInt4TileN;  // 64: INT4 prepack tile rows
constexpr int kBk = kInt4TileK;  // 32: INT4 prepack tile K, divides 128 (FP8 block)
constexpr int kLd = kBk + 8;     // BF16 smem row pitch: 80 B keeps WMMA's 32 B alignment
constexpr int kLdc = kBn + 4;    // FP32 epilogue pitch
constexpr int kThreads = 128;
constexpr int kFp8Block = 128;  // 128x128 weight blocks, 1x128 act groups

enum Kind { kKindBf16 = 0, kKindFp8 = 1, kKindInt4 = 2 };

struct KernelArgs {
  const int* row_offsets;
  int m, n, k, k_per_split, split_k;
  const uint16_t* x_bf16;
  const uint8_t* x_fp8;
  const float* x_scales;
  const uint16_t* w_bf16;
  const uint8_t* w_fp8;
  const float* w_scales;
  const uint32_t* w_q;
  const uint16_t* w_s;
  const uint8_t* w_z;
  int int4_group, n_padded;
  uint16_t* y;
  float* workspace;
};

__device__ __forceinline__ __nv_bfloat16 AsBf16(float v) {
  return __ushort_as_bfloat16(FloatToBf16Bits(v));
}

// The CTA's output tile: rows [m0, row_end) of `group` (32 at most), columns
// [n0, n0 + 64), and its split's K range.
struct CtaTile {
  int group, split;
  int row_end, m0, n0;
  int k_begin, k_end;
};

__device__ __forceinline__ CtaTile LocateTile(const KernelArgs& a) {
  CtaTile t;
  t.group = blockIdx.z / a.split_k;
  t.split = blockIdx.z % a.split_k;
  const int row_begin = a.row_offsets ? a.row_offsets[t.group] : 0;
  t.row_end = a.row_offsets ? a.row_offsets[t.group + 1] : a.m;
  t.m0 = row_begin + blockIdx.y * kBm;
  t.n0 = blockIdx.x * kBn;
  t.k_begin = t.split * a.k_per_split;
  t.k_end = min(a.k, t.k_begin + a.k_per_split);
  return t;
}

// Activations -> as (BF16): this thread's 8 K values of row gr (FP8 scaled
// by its 1x128 group's scale), zeros past the group's rows.
template <int K>
__device__ __forceinline__ void LoadActivationTile(const KernelArgs& a, int k0, int gr, int row_end,
                                                   int a_col, int k_blocks, __nv_bfloat16* ad) {
  if (gr >= row_end) {
#pragma unroll
    for (int i = 0; i < 8; ++i) ad[i] = __ushort_as_bfloat16(0);
    return;
  }
  const size_t off = static_cast<size_t>(gr) * a.k + k0 + a_col;
  if (K == kKindFp8) {
    const uint2 raw = *reinterpret_cast<const uint2*>(a.x_fp8 + off);
    const float s = a.x_scales[static_cast<size_t>(gr) * k_blocks + k0 / kFp8Block];
    const uint8_t* b8 = reinterpret_cast<const uint8_t*>(&raw);
#pragma unroll
    for (int i = 0; i < 8; ++i) ad[i] = AsBf16(Fp8E4m3ToFloat(b8[i]) * s);
  } else {
    *reinterpret_cast<uint4*>(ad) = *reinterpret_cast<const uint4*>(a.x_bf16 + off);
  }
}

// Prepacked INT4 weights -> bd (BF16): tile (n0/64, k0/32) is 64 rows x 4
// words; this thread reads words [2*(tid%2), +2) of its row = 16 K values,
// dequantized as (q - zero) * scale of their group.
__device__ __forceinline__ void LoadInt4WeightTile(const KernelArgs& a, int group, int n0, int k0,
                                                   int b_row, int gn, __nv_bfloat16* bd) {
  const int tid = threadIdx.x;
  const int kt_count = a.k / kBk;
  const uint32_t* tile = a.w_q + static_cast<size_t>(group) * a.n_padded * (a.k / 8) +
                         (static_cast<size_t>(n0 / kBn) * kt_count + k0 / kBk) * kBn * 4;
  const uint2 words = *reinterpret_cast<const uint2*>(tile + b_row * 4 + (tid % 2) * 2);
  const size_t groups = static_cast<size_t>(a.k / a.int4_group);
  const size_t sidx = static_cast<size_t>(group) * groups * a.n_padded +
                      static_cast<size_t>(k0 / a.int4_group) * a.n_padded + gn;
  const float s = Bf16BitsToFloat(a.w_s[sidx]);
  const int z = a.w_z ? static_cast<int>(a.w_z[sidx]) : kInt4SymBias;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const uint32_t w32 = i < 8 ? words.x : words.y;
    const int q = static_cast<int>((w32 >> (4 * (i % 8))) & 0xfu);
    bd[i] = AsBf16(static_cast<float>(q - z) * s);
  }
}

// BF16 or FP8 (128x128 block scales) weights -> bd: this thread's 16 K
// values of weight row gn, zeros past n.
template <int K>
__device__ __forceinline__ void LoadDenseWeightTile(const KernelArgs& a, int group, int k0, int gn,
                                                    int b_col, int k_blocks, __nv_bfloat16* bd) {
  if (gn >= a.n) {
#pragma unroll
    for (int i = 0; i < 16; ++i) bd[i] = __ushort_as_bfloat16(0);
    return;
  }
  const size_t nk = static_cast<size_t>(a.n) * a.k;
  const size_t off = static_cast<size_t>(group) * nk + static_cast<size_t>(gn) * a.k + k0 + b_col;
  if (K == kKindFp8) {
    const uint4 raw = *reinterpret_cast<const uint4*>(a.w_fp8 + off);
    const int n_blocks = (a.n + kFp8Block - 1) / kFp8Block;
    const float s = a.w_scales[(static_cast<size_t>(group) * n_blocks + gn / kFp8Block) * k_blocks +
                               k0 / kFp8Block];
    const uint8_t* b8 = reinterpret_cast<const uint8_t*>(&raw);
#pragma unroll
    for (int i = 0; i < 16; ++i) bd[i] = AsBf16(Fp8E4m3ToFloat(b8[i]) * s);
  } else {
    const uint4* src = reinterpret_cast<const uint4*>(a.w_bf16 + off);
    reinterpret_cast<uint4*>(bd)[0] = src[0];
    reinterpret_cast<uint4*>(bd)[1] = src[1];
  }
}

using AccFragment = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// One K step on the tensor cores: the warp's 16x32 piece (wm, wn) += as x bs^T.
__device__ __forceinline__ void MmaKStep(const __nv_bfloat16* as, const __nv_bfloat16* bs, int wm,
                                         int wn, AccFragment* acc) {
#pragma unroll
  for (int kk = 0; kk < kBk; kk += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::load_matrix_sync(fa, as + wm * 16 * kLd + kk, kLd);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      // bs holds W rows (n) of K: as a K x N operand that is column-major.
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
      wmma::load_matrix_sync(fb, bs + (wn * 32 + j * 16) * kLd + kk, kLd);
      wmma::mma_sync(acc[j], fa, fb, acc[j]);
    }
  }
}

// The staged FP32 tile out: BF16 into y, or with split-K the FP32 partial
// into the split's workspace plane.
__device__ __forceinline__ void WriteOutputTile(const KernelArgs& a, const CtaTile& t,
                                                const float* cs) {
  for (int i = threadIdx.x; i < kBm * kBn; i += kThreads) {
    const int r = i / kBn, c = i % kBn;
    const int row = t.m0 + r, col = t.n0 + c;
    if (row >= t.row_end || col >= a.n) continue;
    const float v = cs[r * kLdc + c];
    if (a.split_k > 1) {
      a.workspace[(static_cast<size_t>(t.split) * a.m + row) * a.n + col] = v;
    } else {
      a.y[static_cast<size_t>(row) * a.n + col] = FloatToBf16Bits(v);
    }
  }
}

template <int K>
__global__ void __launch_bounds__(kThreads) GroupedGemmKernel(KernelArgs a) {
  const CtaTile t = LocateTile(a);
  if (t.m0 >= t.row_end) return;  // this group has fewer rows (or none)

  __shared__ __align__(128) __nv_bfloat16 as[kBm * kLd];
  __shared__ __align__(128) __nv_bfloat16 bs[kBn * kLd];
  __shared__ __align__(128) float cs[kBm * kLdc];

  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int wm = warp / 2, wn = warp % 2;
  AccFragment acc[2];
  wmma::fill_fragment(acc[0], 0.0f);
  wmma::fill_fragment(acc[1], 0.0f);

  // A tile: 32 rows x 32 K, 8 elements per thread.
  const int a_row = tid / 4, a_col = (tid % 4) * 8;
  // B tile: 64 rows x 32 K, 16 elements per thread.
  const int b_row = tid / 2, b_col = (tid % 2) * 16;
  const int gr = t.m0 + a_row;
  const int gn = t.n0 + b_row;
  const int k_blocks = (a.k + kFp8Block - 1) / kFp8Block;

  for (int k0 = t.k_begin; k0 < t.k_end; k0 += kBk) {
    LoadActivationTile<K>(a, k0, gr, t.row_end, a_col, k_blocks, as + a_row * kLd + a_col);
    // Weights are dequantized on the fly, into shared memory only.
    __nv_bfloat16* bd = bs + b_row * kLd + b_col;
    if (K == kKindInt4) {
      LoadInt4WeightTile(a, t.group, t.n0, k0, b_row, gn, bd);
    } else {
      LoadDenseWeightTile<K>(a, t.group, k0, gn, b_col, k_blocks, bd);
    }
    __syncthreads();
    MmaKStep(as, bs, wm, wn, acc);
    __syncthreads();
  }

#pragma unroll
  for (int j = 0; j < 2; ++j) {
    wmma::store_matrix_sync(cs + wm * 16 * kLdc + wn * 32 + j * 16, acc[j], kLdc,
                            wmma::mem_row_major);
  }
  __syncthreads();
  WriteOutputTile(a, t, cs);
}

// Sums split partials in split order (deterministic) and rounds to BF16.
__global__ void SplitKReduceKernel(const float* ws, int splits, size_t mn, uint16_t* y) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < mn;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float acc = 0.0f;
    for (int s = 0; s < splits; ++s) acc += ws[s * mn + i];
    y[i] = FloatToBf16Bits(acc);
  }
}

Status LaunchError(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::Ok();
  return Status::Internal(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

int ChooseSplitK(int m, int n, int k, int sm_count) {
  const long tiles = static_cast<long>((m + kBm - 1) / kBm) * ((n + kBn - 1) / kBn);
  const long want = 2L * sm_count;
  if (tiles >= want || k < 2 * kFp8Block) return 1;
  // Splits are whole 128-K blocks so FP8 block scales and INT4 groups never
  // straddle a split.
  const int max_splits = k / kFp8Block;
  return static_cast<int>(std::min<long>(max_splits, (want + tiles - 1) / tiles));
}

namespace {

KernelArgs MakeKernelArgs(const GroupedGemmArgs& g, int split_k) {
  KernelArgs a{};
  a.row_offsets = g.row_offsets;
  a.m = g.m;
  a.n = g.n;
  a.k = g.k;
  // K per split: whole 128-blocks, last split may be short.
  const int blocks = (g.k + kFp8Block - 1) / kFp8Block;
  a.k_per_split = split_k > 1 ? ((blocks + split_k - 1) / split_k) * kFp8Block : g.k;
  a.split_k = split_k;
  a.x_bf16 = g.x_bf16;
  a.x_fp8 = g.x_fp8;
  a.x_scales = g.x_scales;
  a.w_bf16 = g.w_bf16;
  a.w_fp8 = g.w_fp8;
  a.w_scales = g.w_scales;
  a.w_q = g.w_q;
  a.w_s = g.w_s;
  a.w_z = g.w_z;
  a.int4_group = g.int4_group;
  a.n_padded = g.n_padded;
  a.y = g.y;
  a.workspace = g.workspace;
  return a;
}

// The kernel instance of the weight format, once its operands are checked.
Status LaunchForFormat(const GroupedGemmArgs& g, const KernelArgs& a, dim3 grid,
                       cudaStream_t stream) {
  switch (g.format) {
    case GemmWeightFormat::kBf16:
      if (!g.x_bf16 || !g.w_bf16) return Status::Invalid("grouped GEMM bf16: null operand");
      GroupedGemmKernel<kKindBf16><<<grid, kThreads, 0, stream>>>(a);
      break;
    case GemmWeightFormat::kFp8Block128:
      if (!g.x_fp8 || !g.x_scales || !g.w_fp8 || !g.w_scales) {
        return Status::Invalid("grouped GEMM fp8_block: null operand");
      }
      GroupedGemmKernel<kKindFp8><<<grid, kThreads, 0, stream>>>(a);
      break;
    case GemmWeightFormat::kInt4:
      if (!g.x_bf16 || !g.w_q || !g.w_s || g.n_padded < g.n || g.n_padded % kBn != 0 ||
          (g.int4_group != 32 && g.int4_group != 128) || g.k % g.int4_group != 0) {
        return Status::Invalid(
            "grouped GEMM int4: need prepacked weights (int4_prepack.h), "
            "group 32 or 128 dividing k");
      }
      GroupedGemmKernel<kKindInt4><<<grid, kThreads, 0, stream>>>(a);
      break;
    case GemmWeightFormat::kFp8PerTensor:
      return Status::Invalid("grouped GEMM: FP8 per-tensor goes through CublasLtGemm");
  }
  return LaunchError("GroupedGemmKernel");
}

}  // namespace

Status LaunchGroupedGemm(const GroupedGemmArgs& g, cudaStream_t stream) {
  if (g.m < 0 || g.n <= 0 || g.k <= 0 || g.k % kBk != 0 || g.num_groups <= 0) {
    return Status::Invalid(
        "grouped GEMM: need n > 0, k a positive multiple of 32 (k=" + std::to_string(g.k) + ")");
  }
  if (g.m == 0) return Status::Ok();
  if (g.num_groups > 1 && g.row_offsets == nullptr) {
    return Status::Invalid("grouped GEMM: several groups need row_offsets");
  }
  const int split_k = std::max(1, g.split_k);
  if (split_k > 1 && (g.num_groups != 1 || g.workspace == nullptr)) {
    return Status::Invalid("grouped GEMM: split-K needs one group and a workspace");
  }
  const KernelArgs a = MakeKernelArgs(g, split_k);
  const int max_rows = g.row_offsets ? g.max_rows_per_group : g.m;
  if (max_rows <= 0) return Status::Ok();
  dim3 grid((g.n + kBn - 1) / kBn, (max_rows + kBm - 1) / kBm, g.num_groups * split_k);
  CAPPLAN_RETURN_IF_ERROR(LaunchForFormat(g, a, grid, stream));
  if (split_k > 1) {
    const size_t mn = static_cast<size_t>(g.m) * g.n;
    const int blocks_r = static_cast<int>(std::min<size_t>((mn + 255) / 256, 4096));
    SplitKReduceKernel<<<blocks_r, 256, 0, stream>>>(g.workspace, split_k, mn, g.y);
    CAPPLAN_RETURN_IF_ERROR(LaunchError("SplitKReduceKernel"));
  }
  return Status::Ok();
}

}  // namespace capplan::kernels
