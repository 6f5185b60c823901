#include "kernels/moe/moe_cpu.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "kernels/formats/bf16.h"
#include "kernels/gemm/gemm_cpu.h"

namespace capplan::kernels {

float SiluMulBf16(float g, float u) {
  const double gd = g;
  return RoundToBf16(static_cast<float>(gd / (1.0 + std::exp(-gd)) * static_cast<double>(u)));
}

namespace {

Result<GemmWeights> RandomMatrix(int n, int k, GemmWeightFormat f, int group, bool sym,
                                 std::mt19937* rng) {
  std::normal_distribution<float> d(0.0f, 1.0f / std::sqrt(static_cast<float>(k)));
  std::vector<float> w(static_cast<size_t>(n) * k);
  for (float& v : w) v = d(*rng);
  return QuantizeGemmWeights(w.data(), n, k, f, group, sym);
}

Result<MoeExpertWeights> RandomExpert(int hidden, int inter, GemmWeightFormat f, int group,
                                      bool sym, std::mt19937* rng) {
  MoeExpertWeights e;
  CAPPLAN_ASSIGN_OR_RETURN(e.gate_up, RandomMatrix(2 * inter, hidden, f, group, sym, rng));
  CAPPLAN_ASSIGN_OR_RETURN(e.down, RandomMatrix(hidden, inter, f, group, sym, rng));
  return e;
}

}  // namespace

Result<MoeWeights> RandomMoeWeights(int hidden, int intermediate, int num_experts, int num_shared,
                                    GemmWeightFormat format, int group, bool symmetric,
                                    unsigned seed) {
  if (hidden <= 0 || intermediate <= 0 || num_experts <= 0 || num_shared < 0) {
    return Status::Invalid("RandomMoeWeights: dimensions must be positive");
  }
  std::mt19937 rng(seed);
  MoeWeights w;
  w.hidden = hidden;
  w.intermediate = intermediate;
  std::normal_distribution<float> d(0.0f, 1.0f);
  w.router.resize(static_cast<size_t>(num_experts) * hidden);
  for (float& v : w.router) v = d(rng) / std::sqrt(static_cast<float>(hidden));
  for (int e = 0; e < num_experts; ++e) {
    CAPPLAN_ASSIGN_OR_RETURN(MoeExpertWeights ew,
                             RandomExpert(hidden, intermediate, format, group, symmetric, &rng));
    w.experts.push_back(std::move(ew));
  }
  for (int s = 0; s < num_shared; ++s) {
    CAPPLAN_ASSIGN_OR_RETURN(MoeExpertWeights ew,
                             RandomExpert(hidden, intermediate, format, group, symmetric, &rng));
    w.shared.push_back(std::move(ew));
  }
  return w;
}

Status ExpertForwardCpu(const MoeExpertWeights& e, const float* x, int rows, float* out) {
  if (rows == 0) return Status::Ok();
  const int hidden = e.gate_up.k;
  const int inter = e.gate_up.n / 2;
  if (e.gate_up.n != 2 * inter || e.down.k != inter || e.down.n != hidden) {
    return Status::Invalid("ExpertForwardCpu: gate_up must be [2I, H] and down [H, I]");
  }
  std::vector<float> gu(static_cast<size_t>(rows) * 2 * inter);
  CAPPLAN_RETURN_IF_ERROR(GemmCpu(e.gate_up, x, rows, gu.data()));
  std::vector<float> h(static_cast<size_t>(rows) * inter);
  for (int r = 0; r < rows; ++r) {
    const float* g = gu.data() + static_cast<size_t>(r) * 2 * inter;
    for (int i = 0; i < inter; ++i) {
      h[static_cast<size_t>(r) * inter + i] =
          SiluMulBf16(RoundToBf16(g[i]), RoundToBf16(g[inter + i]));
    }
  }
  CAPPLAN_RETURN_IF_ERROR(GemmCpu(e.down, h.data(), rows, out));
  for (size_t i = 0; i < static_cast<size_t>(rows) * hidden; ++i) out[i] = RoundToBf16(out[i]);
  return Status::Ok();
}

Result<MoePermutation> RouteMoeCpu(const MoeWeights& w, const RouterConfig& rc, const float* x,
                                   int tokens, std::vector<float>* xb, std::vector<float>* xin,
                                   std::vector<float>* weights) {
  const int hidden = w.hidden;
  if (static_cast<int>(w.experts.size()) != rc.num_experts ||
      w.router.size() != static_cast<size_t>(rc.num_experts) * hidden) {
    return Status::Invalid("MoE routing: weights have " + std::to_string(w.experts.size()) +
                           " experts, router config " + std::to_string(rc.num_experts));
  }
  // Hidden states arrive in BF16 in the engine.
  xb->resize(static_cast<size_t>(tokens) * hidden);
  for (size_t i = 0; i < xb->size(); ++i) (*xb)[i] = RoundToBf16(x[i]);
  std::vector<float> logits(static_cast<size_t>(tokens) * rc.num_experts);
  GemmCpuExact(w.router.data(), xb->data(), tokens, rc.num_experts, hidden, logits.data());
  std::vector<int> ids(static_cast<size_t>(tokens) * rc.top_k);
  weights->resize(ids.size());
  CAPPLAN_RETURN_IF_ERROR(RouteCpu(rc, logits.data(), tokens, ids.data(), weights->data()));
  CAPPLAN_ASSIGN_OR_RETURN(MoePermutation perm,
                           PermuteByExpert(ids.data(), tokens, rc.top_k, rc.num_experts));
  xin->resize(ids.size() * hidden);
  for (size_t r = 0; r < ids.size(); ++r) {
    std::copy_n(xb->data() + static_cast<size_t>(perm.row_token[r]) * hidden, hidden,
                xin->data() + r * hidden);
  }
  return perm;
}

Status MoeForwardCpu(const MoeWeights& w, const RouterConfig& rc, const float* x, int tokens,
                     float* y, MoePermutation* permutation) {
  const int hidden = w.hidden;
  if (tokens == 0) return Status::Ok();
  std::vector<float> xb, xin, weights;
  CAPPLAN_ASSIGN_OR_RETURN(MoePermutation perm, RouteMoeCpu(w, rc, x, tokens, &xb, &xin, &weights));
  std::vector<float> out(xin.size());
  for (int e = 0; e < rc.num_experts; ++e) {
    const size_t off = static_cast<size_t>(perm.expert_offsets[e]) * hidden;
    CAPPLAN_RETURN_IF_ERROR(
        ExpertForwardCpu(w.experts[e], xin.data() + off, perm.RowsOf(e), out.data() + off));
  }
  std::vector<double> acc(static_cast<size_t>(tokens) * hidden, 0.0);
  for (int t = 0; t < tokens; ++t) {
    for (int j = 0; j < rc.top_k; ++j) {
      const size_t pair = static_cast<size_t>(t) * rc.top_k + j;
      const float* o = out.data() + static_cast<size_t>(perm.slot_row[pair]) * hidden;
      for (int i = 0; i < hidden; ++i)
        acc[static_cast<size_t>(t) * hidden + i] += weights[pair] * static_cast<double>(o[i]);
    }
  }
  std::vector<float> sh(static_cast<size_t>(tokens) * hidden);
  for (const MoeExpertWeights& s : w.shared) {
    CAPPLAN_RETURN_IF_ERROR(ExpertForwardCpu(s, xb.data(), tokens, sh.data()));
    for (size_t i = 0; i < sh.size(); ++i) acc[i] += sh[i];
  }
  for (size_t i = 0; i < acc.size(); ++i) y[i] = static_cast<float>(acc[i]);
  if (permutation) *permutation = std::move(perm);
  return Status::Ok();
}

}  // namespace capplan::kernels
