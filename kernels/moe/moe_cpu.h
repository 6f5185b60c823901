// CPU reference of one MoE layer, float64-accumulated (via GemmCpu):
//
//   logits = x * router^T                      (FP32 router weights)
//   ids, w = RouteCpu(logits)                  (moe_router.h)
//   rows   = PermuteByExpert(ids)              (moe_permute.h)
//   for each touched expert e, its rows r:     (the grouped GEMM)
//     gu   = x[r] * gate_up_e^T                [rows, 2I], stored BF16
//     h    = silu(gu[:, :I]) * gu[:, I:]       stored BF16
//     o[r] = h * down_e^T                      [rows, H], stored BF16
//   y[t] = sum_j w[t,j] * o[row(t,j)] + shared(x[t])
//
// gate_up stacks gate rows [0, I) over up rows [I, 2I) (SGLang's w13 layout).
// Every intermediate is rounded to BF16 where the device path stores BF16, so
// the CUDA path (moe_cuda.h) must agree within summation order.
//
// Bytes/FLOPs: MoeExpertsCost() in moe_cost.h.
#ifndef CAPPLAN_KERNELS_MOE_MOE_CPU_H_
#define CAPPLAN_KERNELS_MOE_MOE_CPU_H_

#include <vector>

#include "common/status.h"
#include "kernels/gemm/gemm_weights.h"
#include "kernels/moe/moe_permute.h"
#include "kernels/moe/moe_router.h"

namespace capplan::kernels {

struct MoeExpertWeights {
  GemmWeights gate_up;  // [2I, H]
  GemmWeights down;     // [H, I]
};

struct MoeWeights {
  int hidden = 0;
  int intermediate = 0;                   // routed experts' I
  std::vector<float> router;              // [num_experts, hidden]
  std::vector<MoeExpertWeights> experts;  // num_experts
  std::vector<MoeExpertWeights> shared;   // shared experts (any I, any format)
};

// Master float weights drawn from `seed` and quantized to `format`
// (group/symmetric for kInt4); scales ~ 1/sqrt(fan_in) so activations stay O(1).
// For tests, the dry device sweep and the engine's CPU backend.
Result<MoeWeights> RandomMoeWeights(int hidden, int intermediate, int num_experts, int num_shared,
                                    GemmWeightFormat format, int group, bool symmetric,
                                    unsigned seed);

// One expert's MLP on `rows` prepared rows x [rows, H] -> out [rows, H],
// BF16-rounded intermediates as described above.
Status ExpertForwardCpu(const MoeExpertWeights& e, const float* x, int rows, float* out);

// The layer's routing: x rounded to BF16 (*xb [tokens, H]), the router's
// top-k (*weights [tokens * top_k]) and the rows grouped by expert (*xin
// [tokens * top_k, H], in the returned permutation's order).
Result<MoePermutation> RouteMoeCpu(const MoeWeights& w, const RouterConfig& rc, const float* x,
                                   int tokens, std::vector<float>* xb, std::vector<float>* xin,
                                   std::vector<float>* weights);

// Full layer. `permutation` (optional) receives the routing's row grouping.
Status MoeForwardCpu(const MoeWeights& w, const RouterConfig& rc, const float* x, int tokens,
                     float* y, MoePermutation* permutation = nullptr);

// SiLU(g) * u with BF16 rounding of the result (the device's stored form).
float SiluMulBf16(float g, float u);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_MOE_MOE_CPU_H_
