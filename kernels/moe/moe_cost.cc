#include "kernels/moe/moe_cost.h"

#include <cmath>

namespace capplan::kernels {

GemmCost MoeExpertsCost(const MoeShape& s, int64_t touched, GemmWeightFormat f, int group,
                        bool asymmetric) {
  GemmCost c;
  const double pairs = static_cast<double>(s.tokens) * static_cast<double>(s.top_k);
  const double h = static_cast<double>(s.hidden), i = static_cast<double>(s.intermediate);
  c.flops = pairs * (2.0 * h * 2.0 * i + 2.0 * i * h);
  c.weight_bytes = static_cast<double>(touched) *
                   (WeightBytes(2 * s.intermediate, s.hidden, f, group, asymmetric) +
                    WeightBytes(s.hidden, s.intermediate, f, group, asymmetric));
  c.act_bytes = static_cast<double>(s.tokens) * h * 2.0;  // BF16 hidden states in
  c.out_bytes = static_cast<double>(s.tokens) * h * 2.0;  // BF16 combined out
  return c;
}

double ExpectedTouchedExperts(int64_t tokens, int64_t num_experts, int64_t top_k) {
  if (num_experts <= 0) return 0;
  const double p = static_cast<double>(top_k) / static_cast<double>(num_experts);
  return static_cast<double>(num_experts) * (1.0 - std::pow(1.0 - p, static_cast<double>(tokens)));
}

}  // namespace capplan::kernels
