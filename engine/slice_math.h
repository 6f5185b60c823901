// Small row-wise helpers shared by the CPU backend's files: RMSNorm, RoPE, KV
// storage rounding, BF16-output GEMM. Every one works on a single row with a
// fixed summation order (see cpu_backend.h for why that matters).
#ifndef CAPPLAN_ENGINE_SLICE_MATH_H_
#define CAPPLAN_ENGINE_SLICE_MATH_H_

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/status.h"
#include "kernels/formats/bf16.h"
#include "kernels/formats/fp8.h"
#include "kernels/gemm/gemm_cpu.h"
#include "models/types.h"

namespace capplan::engine::slice_math {

// RoPE base for synthetic weights; the numerics do not depend on it.
inline constexpr double kRopeTheta = 10000.0;
inline constexpr float kRmsEps = 1e-6f;

inline void RmsNorm(const float* x, const std::vector<float>& w, int n, float* out) {
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const double inv = 1.0 / std::sqrt(ss / n + kRmsEps);
  for (int i = 0; i < n; ++i) out[i] = kernels::RoundToBf16(static_cast<float>(x[i] * inv) * w[i]);
}

// NeoX-style rotation of pairs (i, i + d/2) by position * theta^(-2i/d).
inline void Rope(float* v, int d, int64_t pos) {
  const int half = d / 2;
  for (int i = 0; i < half; ++i) {
    const double angle = static_cast<double>(pos) * std::pow(kRopeTheta, -2.0 * i / d);
    const double c = std::cos(angle), s = std::sin(angle);
    const double a = v[i], b = v[i + half];
    v[i] = kernels::RoundToBf16(static_cast<float>(a * c - b * s));
    v[i + half] = kernels::RoundToBf16(static_cast<float>(a * s + b * c));
  }
}

// How a value is stored in the cache. FP8 groups of up to 128 values share a
// dynamic FP32 scale (FlashMLA's FP8 KV: one scale per 128 latent values,
// deepseek-ai/FlashMLA README.md); BF16 is a plain rounding.
inline void StoreKv(const float* in, int n, models::Dtype dtype, float* out) {
  if (dtype != models::Dtype::kFp8E4m3) {
    for (int i = 0; i < n; ++i) out[i] = kernels::RoundToBf16(in[i]);
    return;
  }
  for (int g = 0; g < n; g += 128) {
    const int e = std::min(n, g + 128);
    float amax = 0;
    for (int i = g; i < e; ++i) amax = std::max(amax, std::fabs(in[i]));
    const float scale = kernels::Fp8ScaleForAmax(amax);
    for (int i = g; i < e; ++i) out[i] = kernels::RoundToFp8E4m3(in[i] / scale) * scale;
  }
}

// y [rows, w.n] = x * W^T through the CPU GEMM reference (kernels/gemm), stored BF16.
inline Result<std::vector<float>> Gemm(const kernels::GemmWeights& w, const std::vector<float>& x,
                                       int rows) {
  std::vector<float> y(static_cast<size_t>(rows) * w.n);
  if (rows == 0) return y;
  CAPPLAN_RETURN_IF_ERROR(kernels::GemmCpu(w, x.data(), rows, y.data()));
  for (float& v : y) v = kernels::RoundToBf16(v);
  return y;
}

inline double Dot(const float* a, const float* b, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

// Softmax in place (max-subtracted, double).
inline void Softmax(std::vector<double>* s) {
  const double m = *std::max_element(s->begin(), s->end());
  double sum = 0;
  for (double& v : *s) sum += (v = std::exp(v - m));
  for (double& v : *s) v /= sum;
}

}  // namespace capplan::engine::slice_math

#endif  // CAPPLAN_ENGINE_SLICE_MATH_H_
