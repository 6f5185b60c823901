// Token permutation by expert: the (token, slot) pairs the router produced
// are grouped by expert so each expert's rows are contiguous (the
// "contiguous" grouped-GEMM layout of deepseek-ai/DeepGEMM README.md), and the
// inverse map lets the combine step gather each token's k outputs without
// atomics (deterministic sums). Counting sort, stable: within an expert rows
// keep token order.
//
// Cost: reads T*k ids, writes T*k row indices; the row gather itself moves
// T*k*H activations (2 bytes each in BF16).
#ifndef CAPPLAN_KERNELS_MOE_MOE_PERMUTE_H_
#define CAPPLAN_KERNELS_MOE_MOE_PERMUTE_H_

#include <vector>

#include "common/status.h"

namespace capplan::kernels {

struct MoePermutation {
  int tokens = 0;
  int top_k = 0;
  int num_experts = 0;
  std::vector<int> expert_offsets;  // num_experts + 1; rows of expert e: [off[e], off[e+1])
  std::vector<int> row_token;       // tokens*top_k: source token of permuted row p
  std::vector<int> slot_row;        // tokens*top_k: permuted row of (token t, slot j) at t*k+j
  int RowsOf(int e) const { return expert_offsets[e + 1] - expert_offsets[e]; }
  int TouchedExperts() const;  // experts with at least one row
};

// Invalid when an id is outside [0, num_experts).
Result<MoePermutation> PermuteByExpert(const int* topk_ids, int tokens, int top_k, int num_experts);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_MOE_MOE_PERMUTE_H_
