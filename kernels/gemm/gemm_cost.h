// Napkin math for the dense GEMMs: the FLOPs a GEMM must do and the fewest
// HBM bytes it must move (each operand read once, the output written once).
// The device sweep stores these beside each time so achieved bandwidth and
// FLOP/s are derived, never stored (calibrate/MEASUREMENTS.md).
//
// Convention everywhere in kernels/gemm and kernels/moe: y[M,N] = x[M,K] *
// W[N,K]^T (the nn.Linear layout: weights are N rows of K), x and y BF16.
#ifndef CAPPLAN_KERNELS_GEMM_GEMM_COST_H_
#define CAPPLAN_KERNELS_GEMM_GEMM_COST_H_

#include <cstdint>
#include <string>

namespace capplan::kernels {

// How a weight matrix is stored. Activations are BF16 except for
// kFp8Block128, whose activations are quantized FP8 with one FP32 scale per
// token per 128 K values (DeepSeek/DeepGEMM "1x128", deepseek-ai/DeepGEMM
// README.md).
enum class GemmWeightFormat {
  kBf16,          // BF16 weights (W16A16)
  kFp8PerTensor,  // e4m3 weights and activations, one FP32 scale each (W8A8)
  kFp8Block128,   // e4m3 weights, FP32 scale per 128x128 block; acts 1x128
  kInt4,          // W4A16: 4-bit weights, BF16 scale per (group of K, row)
};

// Short names used in measurement records ("bf16", "fp8", "fp8_block", "int4").
const char* GemmWeightFormatName(GemmWeightFormat f);

struct GemmCost {
  double flops = 0;         // 2*M*N*K
  double weight_bytes = 0;  // weights + their scales (+ zero points)
  double act_bytes = 0;     // x (+ its scales)
  double out_bytes = 0;     // y, BF16
  double bytes() const { return weight_bytes + act_bytes + out_bytes; }
};

// `group` is the INT4 group size along K (32 or 128); `asymmetric` adds one
// BF16 pre-scaled zero point per group (the form int4_prepack.h stores).
GemmCost DenseGemmCost(int64_t m, int64_t n, int64_t k, GemmWeightFormat f, int group = 128,
                       bool asymmetric = false);

// Bytes of one weight matrix N x K in format `f` with its scales, as the
// kernels read it. Shared by the MoE cost (touched experts only).
double WeightBytes(int64_t n, int64_t k, GemmWeightFormat f, int group = 128,
                   bool asymmetric = false);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_GEMM_GEMM_COST_H_
