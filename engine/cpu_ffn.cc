// FFN ops of the CPU backend: dense and shared-expert MLPs as three ops
// (gate+up GEMM, SiLU-and-mul, down GEMM), the router, and the routed
// experts with the weighted combine, the arithmetic of kernels/moe's
// MoeForwardCpu split at the program's op boundaries: every intermediate is
// rounded where it is there, and the shared experts' outputs are added to
// the routed sum in the same order.
#include <algorithm>

#include "engine/cpu_backend.h"
#include "engine/slice_math.h"
#include "kernels/formats/bf16.h"
#include "kernels/gemm/gemm_cpu.h"
#include "kernels/moe/moe_permute.h"
#include "kernels/moe/moe_router.h"

namespace capplan::engine {

namespace op_ids = models::op_ids;
namespace {

// A dense layer's FFN op (else a shared expert's).
bool IsDense(const models::ProgramOp& op) {
  return op.filter.ffn == models::LayerFilter::Ffn::kDense;
}

// The op holding the MLPs of a dense or shared-expert FFN op: its gate_up
// (the down op shares them; the activation reads their widths).
const char* MlpOp(const models::ProgramOp& op) {
  return IsDense(op) ? op_ids::kDenseGateUpProj : op_ids::kSharedGateUpProj;
}

// The MLPs an FFN op runs: the dense layer's, or each shared expert's.
std::vector<const kernels::MoeExpertWeights*> Mlps(const OpWeights& w) {
  std::vector<const kernels::MoeExpertWeights*> out;
  for (const kernels::MoeExpertWeights& e : w.mlps) out.push_back(&e);
  return out;
}

}  // namespace

// gate+up of every MLP of the op (their widths add up, as the program's one
// fused GEMM has them).
Status CpuBackend::FfnGateUp(const models::ProgramOp& op, int layer, Step* s) {
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, MlpOp(op)));
  const auto mlps = Mlps(*w);
  const int n = static_cast<int>(s->rows.size());
  s->shared.resize(mlps.size());
  int64_t width = 0;
  for (size_t e = 0; e < mlps.size(); ++e) {
    CAPPLAN_RETURN_IF_ERROR(RunGemm(mlps[e]->gate_up, s->h, n, &s->shared[e], s));
    width += mlps[e]->gate_up.n;
  }
  s->visit->n = width;
  return Status::Ok();
}

Status CpuBackend::FfnActivation(const models::ProgramOp& op, int layer, Step* s) {
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, MlpOp(op)));
  const auto mlps = Mlps(*w);
  const int n = static_cast<int>(s->rows.size());
  s->visit->m = n;
  for (size_t e = 0; e < mlps.size(); ++e) {
    const int inter = mlps[e]->gate_up.n / 2;
    std::vector<float>& gu = s->shared[e];
    std::vector<float> act(static_cast<size_t>(n) * inter);
    for (int r = 0; r < n; ++r) {
      const float* g = gu.data() + static_cast<size_t>(r) * 2 * inter;
      for (int i = 0; i < inter; ++i) {
        act[static_cast<size_t>(r) * inter + i] = kernels::SiluMulBf16(g[i], g[inter + i]);
      }
    }
    gu = std::move(act);
  }
  return Status::Ok();
}

// Dense: the layer's output; shared experts: kept for the routed combine.
Status CpuBackend::FfnDown(const models::ProgramOp& op, int layer, Step* s) {
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, MlpOp(op)));
  const auto mlps = Mlps(*w);
  const int n = static_cast<int>(s->rows.size());
  for (size_t e = 0; e < mlps.size(); ++e) {
    std::vector<float> y;
    CAPPLAN_RETURN_IF_ERROR(RunGemm(mlps[e]->down, s->shared[e], n, &y, s));
    s->shared[e] = std::move(y);
  }
  if (IsDense(op) && n > 0) s->out = std::move(s->shared[0]);
  if (IsDense(op)) s->shared.clear();
  return Status::Ok();
}

// FP32 router GEMM on the BF16 hidden states, then the top-k.
Status CpuBackend::Route(const models::ProgramOp& op, int layer, Step* s) {
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* gate, Weights(layer, op.id));
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* experts, Weights(layer, op_ids::kMoeExperts));
  const kernels::RouterConfig& rc = gate->router_config;
  const int n = static_cast<int>(s->rows.size()), H = config_.hidden;
  s->visit->m = n;
  s->visit->n = rc.num_experts;
  s->visit->k = H;
  if (static_cast<int>(experts->experts.experts.size()) != rc.num_experts ||
      gate->router.size() != static_cast<size_t>(rc.num_experts) * H) {
    return Status::Invalid("CPU backend: MoE weights and router config disagree");
  }
  if (n == 0) return Status::Ok();
  std::vector<float> logits(static_cast<size_t>(n) * rc.num_experts);
  kernels::GemmCpuExact(gate->router.data(), s->h.data(), n, rc.num_experts, H, logits.data());
  s->expert_ids.assign(static_cast<size_t>(n) * rc.top_k, 0);
  s->expert_weights.assign(s->expert_ids.size(), 0.0f);
  return kernels::RouteCpu(rc, logits.data(), n, s->expert_ids.data(), s->expert_weights.data());
}

// Each touched expert's MLP on its rows, the weighted combine (float64),
// plus the shared experts' outputs.
Status CpuBackend::Experts(const models::ProgramOp& op, int layer, Step* s) {
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, op.id));
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* gate, Weights(layer, op_ids::kMoeGate));
  const kernels::MoeWeights& moe = w->experts;
  const kernels::RouterConfig& rc = gate->router_config;
  const int n = static_cast<int>(s->rows.size()), H = config_.hidden;
  s->visit->m = static_cast<int64_t>(n) * rc.top_k;
  s->visit->n = 3 * int64_t{moe.intermediate};
  s->visit->k = H;
  if (n == 0) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(
      kernels::MoePermutation perm,
      kernels::PermuteByExpert(s->expert_ids.data(), n, rc.top_k, rc.num_experts));
  const size_t rows = s->expert_ids.size();
  std::vector<float> xin(rows * H), out(rows * H);
  for (size_t r = 0; r < rows; ++r) {
    std::copy_n(s->h.data() + static_cast<size_t>(perm.row_token[r]) * H, H, xin.data() + r * H);
  }
  for (int e = 0; e < rc.num_experts; ++e) {
    const size_t off = static_cast<size_t>(perm.expert_offsets[e]) * H;
    CAPPLAN_RETURN_IF_ERROR(kernels::ExpertForwardCpu(moe.experts[e], xin.data() + off,
                                                      perm.RowsOf(e), out.data() + off));
  }
  std::vector<double> acc(static_cast<size_t>(n) * H, 0.0);
  for (int t = 0; t < n; ++t) {
    for (int j = 0; j < rc.top_k; ++j) {
      const size_t pair = static_cast<size_t>(t) * rc.top_k + j;
      const float* o = out.data() + static_cast<size_t>(perm.slot_row[pair]) * H;
      for (int i = 0; i < H; ++i) {
        acc[static_cast<size_t>(t) * H + i] += s->expert_weights[pair] * static_cast<double>(o[i]);
      }
    }
  }
  for (const std::vector<float>& sh : s->shared) {
    for (size_t i = 0; i < acc.size(); ++i) acc[i] += sh[i];
  }
  s->shared.clear();
  for (size_t i = 0; i < acc.size(); ++i) s->out[i] = static_cast<float>(acc[i]);
  return Status::Ok();
}

}  // namespace capplan::engine
