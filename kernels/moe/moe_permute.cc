#include "kernels/moe/moe_permute.h"

#include <string>

namespace capplan::kernels {

int MoePermutation::TouchedExperts() const {
  int n = 0;
  for (int e = 0; e < num_experts; ++e) n += RowsOf(e) > 0;
  return n;
}

Result<MoePermutation> PermuteByExpert(const int* topk_ids, int tokens, int top_k,
                                       int num_experts) {
  if (tokens < 0 || top_k <= 0 || num_experts <= 0) {
    return Status::Invalid("PermuteByExpert: need tokens >= 0, top_k > 0, num_experts > 0");
  }
  MoePermutation p;
  p.tokens = tokens;
  p.top_k = top_k;
  p.num_experts = num_experts;
  const size_t pairs = static_cast<size_t>(tokens) * top_k;
  p.expert_offsets.assign(num_experts + 1, 0);
  for (size_t i = 0; i < pairs; ++i) {
    const int e = topk_ids[i];
    if (e < 0 || e >= num_experts) {
      return Status::Invalid("PermuteByExpert: expert id " + std::to_string(e) + " at pair " +
                             std::to_string(i) + " outside [0, " + std::to_string(num_experts) +
                             ")");
    }
    ++p.expert_offsets[e + 1];
  }
  for (int e = 0; e < num_experts; ++e) p.expert_offsets[e + 1] += p.expert_offsets[e];
  std::vector<int> cursor(p.expert_offsets.begin(), p.expert_offsets.end() - 1);
  p.row_token.resize(pairs);
  p.slot_row.resize(pairs);
  for (size_t i = 0; i < pairs; ++i) {
    const int row = cursor[topk_ids[i]]++;
    p.row_token[row] = static_cast<int>(i / top_k);
    p.slot_row[i] = row;
  }
  return p;
}

}  // namespace capplan::kernels
