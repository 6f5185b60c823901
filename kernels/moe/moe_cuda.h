// MoE layer on the device (only with CAPPLAN_HAVE_CUDA), same math as
// MoeForwardCpu (moe_cpu.h). Routing and the permutation are planned on the
// host (the plan/run split of FlashInfer's v0.2 wrappers and DeepGEMM):
// Plan() uploads row groups and combine weights; Run() executes, with no
// host decisions:
//   gather rows by expert -> [FP8 1x128 quant] -> grouped gate_up GEMM ->
//   SiLU-and-mul -> [quant] -> grouped down GEMM -> shared expert (dense
//   path, same kernels) -> weighted combine (each token gathers its k rows;
//   no atomics, deterministic).
// Grouped GEMMs are grouped_gemm.cu in BF16, FP8 (128x128 / 1x128) or W4A16;
// experts with zero rows launch CTAs that exit at once.
//
// Bytes/FLOPs: MoeExpertsCost() (moe_cost.h). This path additionally writes
// and re-reads the intermediates (rows*2I*2 + rows*I*2 + rows*H*2 bytes),
// which a fused kernel would keep on chip.
#ifndef CAPPLAN_KERNELS_MOE_MOE_CUDA_H_
#define CAPPLAN_KERNELS_MOE_MOE_CUDA_H_

#ifdef CAPPLAN_HAVE_CUDA

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

#include "common/status.h"
#include "kernels/moe/moe_cpu.h"
#include "kernels/moe/moe_permute.h"

namespace capplan::kernels {

// Device helper kernels (moe_cuda.cu), exposed for tests and suites.
// out[p, :] = x[row_token[p], :] (BF16).
Status LaunchGatherRows(const uint16_t* x, const int* row_token, int rows, int hidden,
                        uint16_t* out, cudaStream_t s = nullptr);
// BF16 [rows, cols] -> e4m3 codes + FP32 scales [rows, ceil(cols/128)], the
// same bits as QuantizeFp8(..., TokenGroup(128)) on the BF16 values.
Status LaunchQuantFp8Rowwise128(const uint16_t* x, int rows, int cols, uint8_t* codes,
                                float* scales, cudaStream_t s = nullptr);
// gu [rows, 2I] BF16 -> h [rows, I] BF16 = silu(gate) * up.
Status LaunchSiluMul(const uint16_t* gu, int rows, int inter, uint16_t* h,
                     cudaStream_t s = nullptr);
// y[t] = sum_j w[t*k+j] * o[slot_row[t*k+j]] (+ shared[t]), BF16 out.
Status LaunchMoeCombine(const uint16_t* o, const int* slot_row, const float* weights,
                        const uint16_t* shared, int tokens, int top_k, int hidden, uint16_t* y,
                        cudaStream_t s = nullptr);

class MoeCuda {
 public:
  // Uploads the routed experts (and at most one shared expert) in their
  // formats; buffers sized for up to `max_tokens` tokens of `top_k` routes.
  // With `share`, the intermediates (gathered rows, gate_up, activations,
  // FP8 quantised copies) are the ones of `share`, grown as needed: layers
  // that run one after another on one stream need one set, not one each.
  static Result<std::unique_ptr<MoeCuda>> Create(const MoeWeights& w, int max_tokens, int top_k,
                                                 const MoeCuda* share = nullptr);
  ~MoeCuda();
  MoeCuda(const MoeCuda&) = delete;
  MoeCuda& operator=(const MoeCuda&) = delete;

  // Host plan for one batch: the permutation and the combine weights
  // [tokens * top_k] (RouteCpu's output order).
  Status Plan(const MoePermutation& p, const float* topk_weights);
  // x, y: device BF16 [tokens, hidden] for the planned batch.
  Status Run(const uint16_t* x, uint16_t* y, cudaStream_t s = nullptr);
  // Routed experts only (gather .. down), the part the sweep times as
  // moe_grouped_*; leaves the per-row outputs in device memory.
  Status RunExperts(const uint16_t* x, cudaStream_t s = nullptr);

  int hidden() const;
  int tokens() const;

 private:
  struct Impl;
  explicit MoeCuda(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace capplan::kernels

#endif  // CAPPLAN_HAVE_CUDA
#endif  // CAPPLAN_KERNELS_MOE_MOE_CUDA_H_
