// Device GEMMs (only with CAPPLAN_HAVE_CUDA). All pointers are device
// pointers; y[M,N] = x[M,K] * W[N,K]^T with BF16 output, as in gemm_cpu.h.
//
// Which path does what, and why:
//  - BF16 and FP8 per-tensor: cuBLASLt ("TN": W is the transposed A operand,
//    the layout cuBLASLt requires for FP8 on Hopper). FP8 scales via
//    CUBLASLT_MATMUL_DESC_A/B_SCALE_POINTER (device FP32 scalars).
//  - FP8 with 128x128 weight blocks and 1x128 activation groups: an own
//    kernel (grouped_gemm.cu). cuBLASLt 13.1's header declares
//    CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F / VEC128_32F, but we could
//    not verify on a device that sm_90 accepts them nor pin the scale-tensor
//    layout they expect, so the block path does not depend on them.
//  - W4A16: the same own kernel on prepacked INT4 (int4_prepack.h), tuned
//    for decode (M <= 64: one 32-row tile or two, split-K to fill the SMs),
//    correct for any M. It must lose to FP8 at large M: its MMAs are BF16
//    (989 TFLOPS dense ceiling) and every CTA repeats the INT4->BF16 dequant
//    for each M tile, while FP8 W8A8 runs at 1979 TFLOPS with scales applied
//    once per block; INT4 wins only where weight bytes dominate (4x fewer
//    than BF16, 2x fewer than FP8).
// The own kernel widens every operand to BF16 in shared memory and runs
// BF16 tensor-core MMAs (WMMA 16x16x16), so it never reaches the FP8 rate:
// it is the readable reference rung of a reference-to-fast ladder (as in
// HazyResearch/ThunderKittens kernels/gemm/educational_h100/README.md), not
// DeepGEMM. Its cost per call is DenseGemmCost() (gemm_cost.h).
#ifndef CAPPLAN_KERNELS_GEMM_GEMM_CUDA_H_
#define CAPPLAN_KERNELS_GEMM_GEMM_CUDA_H_

#ifdef CAPPLAN_HAVE_CUDA

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

#include "common/status.h"
#include "kernels/gemm/gemm_cost.h"

namespace capplan::kernels {

// cuBLASLt handle plus workspace, created once and reused (handle creation
// must stay out of timed regions).
class CublasLtGemm {
 public:
  // Opens libcublasLt and binds the entry points it calls, once per
  // process (it is not linked: see gemm_cublaslt.cc); Create() calls it.
  // Needs no device.
  static Status Load();
  static Result<std::unique_ptr<CublasLtGemm>> Create();
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // BF16 x BF16 -> BF16, FP32 accumulation.
  Status Bf16(const uint16_t* x, const uint16_t* w, uint16_t* y, int m, int n, int k,
              cudaStream_t stream = nullptr);
  // e4m3 x e4m3 -> BF16: y = (x_scale * w_scale) * (qx * qw^T); scales are
  // device FP32 scalars. cuBLASLt needs K % 16 == 0 for FP8.
  Status Fp8PerTensor(const uint8_t* x, const float* x_scale, const uint8_t* w,
                      const float* w_scale, uint16_t* y, int m, int n, int k,
                      cudaStream_t stream = nullptr);

 private:
  struct Impl;  // handle, workspace, per-shape plans (gemm_cublaslt.cc)
  explicit CublasLtGemm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The own grouped kernel (grouped_gemm.cu). A dense GEMM is one group.
// Group g owns activation rows [row_offsets[g], row_offsets[g+1]) and the
// g-th weight matrix; every group has the same N and K (MoE experts).
struct GroupedGemmArgs {
  GemmWeightFormat format = GemmWeightFormat::kBf16;  // kBf16, kFp8Block128 or kInt4
  int num_groups = 1;
  const int* row_offsets = nullptr;  // device, num_groups+1; nullptr: one group of m rows
  int m = 0;                         // total rows
  int max_rows_per_group = 0;        // host-side bound for the grid (plan); m when one group
  int n = 0;
  int k = 0;  // multiple of 32
  // Activations [m, k].
  const uint16_t* x_bf16 = nullptr;  // kBf16, kInt4
  const uint8_t* x_fp8 = nullptr;    // kFp8Block128
  const float* x_scales = nullptr;   // [m, k/128]
  // Weights, groups back to back.
  const uint16_t* w_bf16 = nullptr;  // [groups, n, k]
  const uint8_t* w_fp8 = nullptr;    // [groups, n, k]
  const float* w_scales = nullptr;   // [groups, ceil(n/128), k/128]
  const uint32_t* w_q = nullptr;     // prepacked, [groups, n_padded*k/8]
  const uint16_t* w_s = nullptr;     // BF16 scales, [groups, k/group, n_padded]
  const uint8_t* w_z = nullptr;      // zeros (asymmetric), same shape; nullptr: symmetric
  int int4_group = 128;
  int n_padded = 0;
  uint16_t* y = nullptr;  // [m, n] BF16
  // Split-K (dense only, num_groups == 1): partial sums go to `workspace`
  // (split_k * m * n floats) and a second kernel reduces them in a fixed
  // order, so results stay deterministic.
  int split_k = 1;
  float* workspace = nullptr;
};

// Host plan for a dense decode GEMM: enough CTAs to cover `sm_count` SMs
// twice; 1 when the grid is already large or K is short.
int ChooseSplitK(int m, int n, int k, int sm_count);

Status LaunchGroupedGemm(const GroupedGemmArgs& a, cudaStream_t stream = nullptr);

}  // namespace capplan::kernels

#endif  // CAPPLAN_HAVE_CUDA
#endif  // CAPPLAN_KERNELS_GEMM_GEMM_CUDA_H_
