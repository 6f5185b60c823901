#include "kernels/moe/moe_router.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace capplan::kernels {

Result<MoeScoring> ParseMoeScoring(const std::string& name) {
  if (name == "softmax") return MoeScoring::kSoftmax;
  if (name == "sigmoid") return MoeScoring::kSigmoid;
  return Status::Usage("router scoring '" + name + "': expected softmax or sigmoid");
}

Status ValidateRouterConfig(const RouterConfig& c) {
  if (c.num_experts <= 0 || c.top_k <= 0 || c.top_k > c.num_experts) {
    return Status::Invalid("router: need 0 < top_k (" + std::to_string(c.top_k) +
                           ") <= num_experts (" + std::to_string(c.num_experts) + ")");
  }
  if (c.n_group <= 0 || c.num_experts % c.n_group != 0 || c.topk_group <= 0 ||
      c.topk_group > c.n_group) {
    return Status::Invalid("router: n_group must divide num_experts and 0 < topk_group <= n_group");
  }
  if (c.topk_group * (c.num_experts / c.n_group) < c.top_k) {
    return Status::Invalid("router: topk_group groups hold fewer experts than top_k");
  }
  if (!c.correction_bias.empty() && static_cast<int>(c.correction_bias.size()) != c.num_experts) {
    return Status::Invalid("router: correction_bias must have num_experts entries");
  }
  return Status::Ok();
}

Status RouteCpu(const RouterConfig& c, const float* logits, int tokens, int* topk_ids,
                float* topk_weights) {
  CAPPLAN_RETURN_IF_ERROR(ValidateRouterConfig(c));
  const int e_count = c.num_experts;
  const int per_group = e_count / c.n_group;
  std::vector<double> score(e_count), choice(e_count);
  std::vector<int> order(e_count);
  std::vector<char> allowed(e_count);
  for (int t = 0; t < tokens; ++t) {
    const float* l = logits + static_cast<size_t>(t) * e_count;
    if (c.scoring == MoeScoring::kSoftmax) {
      double mx = l[0];
      for (int e = 1; e < e_count; ++e) mx = std::max(mx, static_cast<double>(l[e]));
      double sum = 0;
      for (int e = 0; e < e_count; ++e) sum += score[e] = std::exp(l[e] - mx);
      for (int e = 0; e < e_count; ++e) score[e] /= sum;
    } else {
      for (int e = 0; e < e_count; ++e)
        score[e] = 1.0 / (1.0 + std::exp(-static_cast<double>(l[e])));
    }
    for (int e = 0; e < e_count; ++e) {
      choice[e] = score[e] + (c.correction_bias.empty() ? 0.0 : c.correction_bias[e]);
    }
    // Lower index wins ties: stable comparison on (value desc, index asc).
    auto better = [&](int a, int b) {
      return choice[a] > choice[b] || (choice[a] == choice[b] && a < b);
    };
    std::fill(allowed.begin(), allowed.end(), 1);
    if (c.n_group > 1 && c.topk_group < c.n_group) {
      std::vector<double> gscore(c.n_group);
      std::vector<int> gidx(c.n_group);
      for (int g = 0; g < c.n_group; ++g) {
        std::vector<double> v(choice.begin() + g * per_group, choice.begin() + (g + 1) * per_group);
        std::sort(v.begin(), v.end(), std::greater<double>());
        gscore[g] = v[0] + (per_group > 1 ? v[1] : 0.0);
      }
      std::iota(gidx.begin(), gidx.end(), 0);
      std::stable_sort(gidx.begin(), gidx.end(),
                       [&](int a, int b) { return gscore[a] > gscore[b]; });
      std::fill(allowed.begin(), allowed.end(), 0);
      for (int i = 0; i < c.topk_group; ++i) {
        for (int e = gidx[i] * per_group; e < (gidx[i] + 1) * per_group; ++e) allowed[e] = 1;
      }
    }
    order.clear();
    for (int e = 0; e < e_count; ++e) {
      if (allowed[e]) order.push_back(e);
    }
    std::partial_sort(order.begin(), order.begin() + c.top_k, order.end(), better);
    double wsum = 0;
    for (int j = 0; j < c.top_k; ++j) wsum += score[order[j]];
    for (int j = 0; j < c.top_k; ++j) {
      double w = score[order[j]];
      if (c.renormalize && wsum > 0) w /= wsum;
      w *= c.routed_scaling_factor;
      topk_ids[static_cast<size_t>(t) * c.top_k + j] = order[j];
      topk_weights[static_cast<size_t>(t) * c.top_k + j] = static_cast<float>(w);
    }
  }
  return Status::Ok();
}

}  // namespace capplan::kernels
