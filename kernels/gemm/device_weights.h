// A set of same-shaped weight matrices (one dense layer, or all experts of a
// MoE layer) uploaded in the layout grouped_gemm.cu reads: BF16 back to back;
// e4m3 codes + 128x128 FP32 block scales; or INT4 prepacked
// (int4_prepack.h) with BF16 scales [+ zeros]. Only with CAPPLAN_HAVE_CUDA.
#ifndef CAPPLAN_KERNELS_GEMM_DEVICE_WEIGHTS_H_
#define CAPPLAN_KERNELS_GEMM_DEVICE_WEIGHTS_H_

#ifdef CAPPLAN_HAVE_CUDA

#include <vector>

#include "common/status.h"
#include "kernels/gemm/gemm_cuda.h"
#include "kernels/gemm/gemm_weights.h"
#include "kernels/harness/device_buffer.h"

namespace capplan::kernels {

struct DeviceWeightSet {
  GemmWeightFormat format = GemmWeightFormat::kBf16;
  int count = 0, n = 0, k = 0;
  int int4_group = 128, n_padded = 0;
  bool symmetric = true;
  DeviceBuffer<uint16_t> bf16;
  DeviceBuffer<uint8_t> fp8;
  DeviceBuffer<float> fp8_scales;
  DeviceBuffer<uint32_t> q;
  DeviceBuffer<uint16_t> s;
  DeviceBuffer<uint8_t> z;
  // Fills the weight fields of `a` (format, n, k, pointers).
  void Bind(GroupedGemmArgs* a) const;
};

// All matrices must share format, shape (and INT4 group/symmetry). FP8
// per-tensor is rejected: the grouped kernel takes 128x128 blocks.
Result<DeviceWeightSet> UploadWeightSet(const std::vector<const GemmWeights*>& mats);

}  // namespace capplan::kernels

#endif  // CAPPLAN_HAVE_CUDA
#endif  // CAPPLAN_KERNELS_GEMM_DEVICE_WEIGHTS_H_
