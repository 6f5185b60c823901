// CPU references for the dense GEMMs, float64-accumulated: y[M,N] =
// x[M,K] * W[N,K]^T for every weight format in gemm_weights.h. They compute
// exactly what each device kernel computes up to summation order: the same
// quantized operands (activations rounded to BF16, or quantized to FP8 with
// the same scales), products and sums in double, one rounding at the end.
//
// Bytes/FLOPs of each GEMM: DenseGemmCost() in gemm_cost.h (2*M*N*K FLOPs;
// N*K*{2, 1, 0.5} weight bytes + scales, M*K*{2, 1} activation bytes, M*N*2
// output bytes). These CPU loops are O(M*N*K) in double: references, not
// performance paths.
#ifndef CAPPLAN_KERNELS_GEMM_GEMM_CPU_H_
#define CAPPLAN_KERNELS_GEMM_GEMM_CPU_H_

#include <vector>

#include "common/status.h"
#include "kernels/gemm/gemm_weights.h"

namespace capplan::kernels {

// Activations in the form the GEMM of `format` consumes them: BF16 for
// kBf16/kInt4; e4m3 with one dynamic per-tensor scale for kFp8PerTensor;
// e4m3 with one scale per token per 128 K (1x128) for kFp8Block128.
struct GemmActivations {
  GemmWeightFormat format = GemmWeightFormat::kBf16;
  int m = 0;
  int k = 0;
  std::vector<Bf16> bf16;  // m*k, kBf16 / kInt4
  Fp8Tensor fp8;           // kFp8PerTensor / kFp8Block128
};

Result<GemmActivations> PrepareGemmActivations(const float* x, int m, int k,
                                               GemmWeightFormat format);

// y [m, w.n] in float (not rounded to BF16; callers that model a BF16 output
// round with RoundToBf16). Invalid when a.k != w.k or formats disagree.
Status GemmCpuPrepared(const GemmWeights& w, const GemmActivations& a, float* y);

// Convenience: prepares x [m, w.k] for w.format, then GemmCpuPrepared.
Status GemmCpu(const GemmWeights& w, const float* x, int m, float* y);

// Plain float64 GEMM on unquantized float operands: the "ideal" answer the
// quantized paths are compared with (their documented tolerances in the tests).
void GemmCpuExact(const float* w, const float* x, int m, int n, int k, float* y);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_GEMM_GEMM_CPU_H_
