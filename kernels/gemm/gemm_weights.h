// One weight matrix W [N, K] (nn.Linear layout) in any of the formats the
// GEMMs and the MoE path take: BF16, FP8 e4m3 with a per-tensor or 128x128
// block scale, or INT4 (group 32/128, symmetric uint4b8 or asymmetric uint4).
// The encodings themselves are kernels/formats'; this only bundles them with
// the format tag so CPU references and device uploads can switch on it.
#ifndef CAPPLAN_KERNELS_GEMM_GEMM_WEIGHTS_H_
#define CAPPLAN_KERNELS_GEMM_GEMM_WEIGHTS_H_

#include <vector>

#include "common/status.h"
#include "kernels/formats/bf16.h"
#include "kernels/formats/fp8.h"
#include "kernels/formats/int4.h"
#include "kernels/gemm/gemm_cost.h"

namespace capplan::kernels {

struct GemmWeights {
  GemmWeightFormat format = GemmWeightFormat::kBf16;
  int n = 0;               // output features (rows)
  int k = 0;               // input features (cols)
  std::vector<Bf16> bf16;  // kBf16: n*k row-major
  Fp8Tensor fp8;           // kFp8PerTensor (per-tensor) / kFp8Block128 (128x128)
  Int4Weights int4;        // kInt4

  // Napkin-math bytes as stored (what a kernel streams from HBM).
  double StorageBytes() const;
};

// Quantizes float master weights w [n, k] into `format`. `group` and
// `symmetric` apply to kInt4 only. Errors (Usage/Invalid) from the format
// quantizers propagate: bad group, K not a multiple of the group, NaN input.
Result<GemmWeights> QuantizeGemmWeights(const float* w, int n, int k, GemmWeightFormat format,
                                        int group = 128, bool symmetric = true);

// Dequantized weights as float [n, k]: what the format represents exactly.
std::vector<float> DequantizeGemmWeights(const GemmWeights& w);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_GEMM_GEMM_WEIGHTS_H_
