// Napkin math for the MoE expert computation (grouped gate_up GEMM, SiLU-mul,
// grouped down GEMM) over the experts a batch touches. Decode is bound by the
// bytes of the touched experts' weights; prefill touches every expert and is
// bound by FLOPs. Minimal bytes: each touched expert's weights once, the
// tokens' hidden states in and out once (BF16); intermediates could stay on
// chip in a fused kernel, so they are not counted.
#ifndef CAPPLAN_KERNELS_MOE_MOE_COST_H_
#define CAPPLAN_KERNELS_MOE_MOE_COST_H_

#include <cstdint>

#include "kernels/gemm/gemm_cost.h"

namespace capplan::kernels {

struct MoeShape {
  int64_t tokens = 0;
  int64_t hidden = 0;        // H
  int64_t intermediate = 0;  // I per expert (per rank after TP of the experts)
  int64_t num_experts = 0;   // experts on this rank
  int64_t top_k = 0;         // routed pairs per token landing on this rank
};

// touched_experts: experts with >= 1 row (from the permutation, or
// ExpectedTouchedExperts for napkin math).
GemmCost MoeExpertsCost(const MoeShape& s, int64_t touched_experts, GemmWeightFormat f,
                        int group = 128, bool asymmetric = false);

// E * (1 - (1 - k/E)^T): expected distinct experts hit by T tokens each
// choosing k of E uniformly (sampling without replacement per token).
double ExpectedTouchedExperts(int64_t tokens, int64_t num_experts, int64_t top_k);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_MOE_MOE_COST_H_
