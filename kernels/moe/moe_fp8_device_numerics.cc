#include "kernels/moe/moe_fp8_device_numerics.h"

#include <cmath>
#include <string>

#include "kernels/formats/bf16.h"
#include "kernels/formats/fp8.h"
#include "kernels/gemm/gemm_cost.h"

namespace capplan::kernels {
namespace {

// y [m, n] = x [m, k] * w^T: x quantized to e4m3 (1x128), both operands
// widened to BF16 as grouped_gemm.cu loads them, FP32 sums, BF16 stores.
Status Fp8GemmDeviceNumerics(const GemmWeights& w, const float* x, int m, float* y) {
  if (w.format != GemmWeightFormat::kFp8Block128) {
    return Status::Invalid(std::string("Fp8GemmDeviceNumerics: weights are ") +
                           GemmWeightFormatName(w.format) + ", not fp8_block");
  }
  CAPPLAN_ASSIGN_OR_RETURN(Fp8Tensor a, QuantizeFp8(x, m, w.k, Fp8Blocking::TokenGroup(128)));
  std::vector<float> ad(static_cast<size_t>(m) * w.k), wd(static_cast<size_t>(w.n) * w.k);
  for (int r = 0; r < m; ++r) {
    for (int c = 0; c < w.k; ++c) {
      const size_t i = static_cast<size_t>(r) * w.k + c;
      ad[i] = RoundToBf16(Fp8E4m3ToFloat(a.codes[i]) * a.ScaleAt(r, c));
    }
  }
  for (int r = 0; r < w.n; ++r) {
    for (int c = 0; c < w.k; ++c) {
      const size_t i = static_cast<size_t>(r) * w.k + c;
      wd[i] = RoundToBf16(Fp8E4m3ToFloat(w.fp8.codes[i]) * w.fp8.ScaleAt(r, c));
    }
  }
  for (int r = 0; r < m; ++r) {
    const float* xr = ad.data() + static_cast<size_t>(r) * w.k;
    for (int j = 0; j < w.n; ++j) {
      const float* wr = wd.data() + static_cast<size_t>(j) * w.k;
      float acc = 0.0f;
      for (int c = 0; c < w.k; ++c) acc += xr[c] * wr[c];
      y[static_cast<size_t>(r) * w.n + j] = RoundToBf16(acc);
    }
  }
  return Status::Ok();
}

}  // namespace

Status Fp8ExpertForwardDeviceNumerics(const MoeExpertWeights& e, const float* x, int rows,
                                      float* out) {
  if (rows == 0) return Status::Ok();
  const int inter = e.gate_up.n / 2;
  std::vector<float> gu(static_cast<size_t>(rows) * 2 * inter), h(static_cast<size_t>(rows) * inter);
  CAPPLAN_RETURN_IF_ERROR(Fp8GemmDeviceNumerics(e.gate_up, x, rows, gu.data()));
  for (int r = 0; r < rows; ++r) {
    const float* g = gu.data() + static_cast<size_t>(r) * 2 * inter;
    for (int i = 0; i < inter; ++i) {
      // moe_cuda.cu's SiluMulKernel, in float.
      h[static_cast<size_t>(r) * inter + i] =
          RoundToBf16(g[i] / (1.0f + std::exp(-g[i])) * g[inter + i]);
    }
  }
  return Fp8GemmDeviceNumerics(e.down, h.data(), rows, out);
}

Status MoeForwardFp8DeviceNumerics(const MoeWeights& w, const RouterConfig& rc, const float* x,
                                   int tokens, float* y) {
  if (tokens == 0) return Status::Ok();
  const int hidden = w.hidden;
  std::vector<float> xb, xin, wts;
  CAPPLAN_ASSIGN_OR_RETURN(MoePermutation perm, RouteMoeCpu(w, rc, x, tokens, &xb, &xin, &wts));
  std::vector<float> o(xin.size());
  for (int e = 0; e < rc.num_experts; ++e) {
    const size_t off = static_cast<size_t>(perm.expert_offsets[e]) * hidden;
    CAPPLAN_RETURN_IF_ERROR(Fp8ExpertForwardDeviceNumerics(w.experts[e], xin.data() + off,
                                                           perm.RowsOf(e), o.data() + off));
  }
  std::vector<float> shared(static_cast<size_t>(tokens) * hidden, 0.0f), sh(shared.size());
  for (const MoeExpertWeights& s : w.shared) {
    CAPPLAN_RETURN_IF_ERROR(Fp8ExpertForwardDeviceNumerics(s, xb.data(), tokens, sh.data()));
    for (size_t i = 0; i < sh.size(); ++i) shared[i] += sh[i];
  }
  // moe_cuda.cu's CombineKernel: FP32 weighted sum, the shared output added,
  // one BF16 store.
  for (int t = 0; t < tokens; ++t) {
    for (int c = 0; c < hidden; ++c) {
      float acc = 0.0f;
      for (int j = 0; j < rc.top_k; ++j) {
        const size_t pair = static_cast<size_t>(t) * rc.top_k + j;
        acc += wts[pair] * o[static_cast<size_t>(perm.slot_row[pair]) * hidden + c];
      }
      const size_t i = static_cast<size_t>(t) * hidden + c;
      y[i] = RoundToBf16(acc + shared[i]);
    }
  }
  return Status::Ok();
}

}  // namespace capplan::kernels
