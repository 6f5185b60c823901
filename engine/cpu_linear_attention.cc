// Gated DeltaNet ops of the CPU backend (a hybrid's linear layers), after
// transformers Qwen3NextGatedDeltaNet: in_proj_qkvz and in_proj_ba, the
// causal depthwise conv with SiLU over q/k/v, the delta rule
// (torch_recurrent_gated_delta_rule: q and k L2-normed, q scaled by
// 1/sqrt(dk); per token S *= exp(g), S += k (beta (v - S^T k))^T,
// o = S^T q, with g = -exp(A_log) softplus(a + dt_bias) and
// beta = sigmoid(b)), the gated RMSNorm (norm(o) x SiLU(z)) and out_proj.
// Both scan ops run the recurrent form token by token: the chunked prefill
// kernel the pricer prices computes the same recurrence in another order,
// and per-token rows keep a request's outputs independent of its batch and
// of how its prompt was chunked. Each request keeps its conv and recurrent
// state per layer across steps (CpuBackend::linear_state_).
#include <algorithm>
#include <cmath>

#include "engine/cpu_backend.h"
#include "engine/slice_math.h"
#include "kernels/formats/bf16.h"

namespace capplan::engine {

namespace op_ids = models::op_ids;
namespace {

using kernels::RoundToBf16;

double Silu(double x) { return x / (1.0 + std::exp(-x)); }

void L2NormScale(float* x, int n, double scale) {
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const double inv = scale / std::sqrt(ss + slice_math::kRmsEps);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(x[i] * inv);
}

}  // namespace

Status CpuBackend::LinearProjection(const models::ProgramOp& op, int layer, Step* s) {
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, op.id));
  const int n = static_cast<int>(s->rows.size());
  if (op.id == op_ids::kLinearInProjQkvz) return RunGemm(w->gemm, s->h, n, &s->qkvz, s);
  if (op.id == op_ids::kLinearInProjBa) return RunGemm(w->gemm, s->h, n, &s->ba, s);
  // Row-parallel like o_proj: the rank's partial sum is its output.
  return RunGemm(w->gemm, s->attn, n, &s->out, s);
}

// Causal depthwise conv over the q/k/v channels of in_proj_qkvz (the first
// conv_dim of each row; z follows), each tap over the request's previous
// inputs, then SiLU.
Status CpuBackend::LinearConv(const models::ProgramOp& op, int layer, Step* s) {
  const SliceConfig& c = config_;
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, op.id));
  const int n = static_cast<int>(s->rows.size()), C = static_cast<int>(op.linear.conv_dim);
  const int K = static_cast<int>(op.linear.conv_kernel),
            row = static_cast<int>(s->qkvz.size()) / std::max(1, n);
  s->visit->m = n;
  s->mixed.assign(static_cast<size_t>(n) * C, 0.0f);
  for (int i = 0; i < n; ++i) {
    const StepRequest& r = (*s->batch)[s->rows[i].req];
    std::vector<LinearState>& st = linear_state_[r.request];
    st.resize(c.layers);
    std::vector<float>& prev = st[layer].conv;  // [K - 1][C], oldest first
    if (s->rows[i].position == 0) prev.assign(static_cast<size_t>(K - 1) * C, 0.0f);
    if (prev.size() != static_cast<size_t>(K - 1) * C) {
      return Status::Invalid("CPU backend: request " + std::to_string(r.request) +
                             " resumes without its linear-attention state (a cached prefix "
                             "of a hybrid model is not supported)");
    }
    const float* x = &s->qkvz[static_cast<size_t>(i) * row];
    for (int ch = 0; ch < C; ++ch) {
      const float* tap = &w->conv[static_cast<size_t>(ch) * K];
      double acc = static_cast<double>(tap[K - 1]) * x[ch];
      for (int j = 0; j < K - 1; ++j) acc += static_cast<double>(tap[j]) * prev[j * C + ch];
      s->mixed[static_cast<size_t>(i) * C + ch] = RoundToBf16(static_cast<float>(Silu(acc)));
    }
    if (K > 1) {
      std::copy(prev.begin() + C, prev.end(), prev.begin());
      std::copy(x, x + C, prev.end() - C);
    }
  }
  return Status::Ok();
}

// The delta rule over the rows of this op's form (decode rows for the
// recurrent update, prefill rows for the chunked scan), token by token.
Status CpuBackend::DeltaRule(const models::ProgramOp& op, int layer, Step* s) {
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, op.id));
  const models::LinearShape& ls = op.linear;
  const int n = static_cast<int>(s->rows.size()), C = static_cast<int>(ls.conv_dim);
  const int kh = static_cast<int>(ls.key_heads), vh = static_cast<int>(ls.value_heads);
  const int dk = static_cast<int>(ls.key_dim), dv = static_cast<int>(ls.value_dim);
  const int per = vh / std::max(1, kh);
  const bool decode = op.state_op == models::LinearStateOp::kRecurrentUpdate;
  s->visit->heads = vh;
  s->visit->kv_heads = kh;
  s->visit->head_dim = dk;
  s->attn.resize(static_cast<size_t>(n) * vh * dv);
  std::vector<float> q(static_cast<size_t>(kh) * dk), k(q.size()), kv(dv);
  for (int i = 0; i < n; ++i) {
    if (s->rows[i].decode != decode) continue;
    ++s->visit->m;
    std::vector<float>& S = linear_state_[(*s->batch)[s->rows[i].req].request][layer].ssm;
    if (s->rows[i].position == 0) S.assign(static_cast<size_t>(vh) * dk * dv, 0.0f);
    const float* m = &s->mixed[static_cast<size_t>(i) * C];
    std::copy(m, m + kh * dk, q.begin());
    std::copy(m + kh * dk, m + 2 * kh * dk, k.begin());
    for (int h = 0; h < kh; ++h) {
      L2NormScale(&q[h * dk], dk, 1.0 / std::sqrt(static_cast<double>(dk)));
      L2NormScale(&k[h * dk], dk, 1.0);
    }
    const float* ba = &s->ba[static_cast<size_t>(i) * 2 * vh];
    for (int hv = 0; hv < vh; ++hv) {
      const float* qh = &q[(hv / per) * dk];
      const float* kk = &k[(hv / per) * dk];
      const float* v = m + 2 * kh * dk + hv * dv;
      const double x = ba[vh + hv] + w->dt_bias[hv];
      const double decay = std::exp(-std::exp(w->a_log[hv]) * std::log1p(std::exp(x)));
      const double beta = 1.0 / (1.0 + std::exp(-ba[hv]));
      float* Sh = &S[static_cast<size_t>(hv) * dk * dv];
      for (int e = 0; e < dk * dv; ++e) Sh[e] = static_cast<float>(Sh[e] * decay);
      for (int d = 0; d < dv; ++d) {
        double acc = 0;
        for (int j = 0; j < dk; ++j) acc += static_cast<double>(Sh[j * dv + d]) * kk[j];
        kv[d] = static_cast<float>((v[d] - acc) * beta);
      }
      for (int j = 0; j < dk; ++j) {
        for (int d = 0; d < dv; ++d) Sh[j * dv + d] += kk[j] * kv[d];
      }
      float* o = &s->attn[(static_cast<size_t>(i) * vh + hv) * dv];
      for (int d = 0; d < dv; ++d) {
        double acc = 0;
        for (int j = 0; j < dk; ++j) acc += static_cast<double>(Sh[j * dv + d]) * qh[j];
        o[d] = RoundToBf16(static_cast<float>(acc));
      }
    }
  }
  return Status::Ok();
}

// RMSNorm over each value head's output, scaled by SiLU of its gate z (the
// last value_heads x value_dim of the row's in_proj_qkvz).
Status CpuBackend::LinearNormGate(const models::ProgramOp& op, int layer, Step* s) {
  const SliceConfig& c = config_;
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, op.id));
  const int n = static_cast<int>(s->rows.size());
  const int vh = c.linear_value_heads, dv = c.linear_value_dim;
  const int row = static_cast<int>(s->qkvz.size()) / std::max(1, n);
  s->visit->m = n;
  std::vector<float> normed(dv);
  for (int i = 0; i < n; ++i) {
    const float* z = &s->qkvz[static_cast<size_t>(i) * row + row - vh * dv];
    for (int hv = 0; hv < vh; ++hv) {
      float* o = &s->attn[(static_cast<size_t>(i) * vh + hv) * dv];
      slice_math::RmsNorm(o, w->norm, dv, normed.data());
      for (int d = 0; d < dv; ++d) {
        o[d] = RoundToBf16(static_cast<float>(normed[d] * Silu(z[hv * dv + d])));
      }
    }
  }
  return Status::Ok();
}

}  // namespace capplan::engine
