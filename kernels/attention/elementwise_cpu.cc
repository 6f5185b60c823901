#include <cmath>

#include "kernels/attention/elementwise.h"

namespace capplan::kernels {

void FusedAddRmsNormCpu(int n, int d, float eps, const Bf16* x, Bf16* residual, const Bf16* w,
                        float* y) {
  for (int i = 0; i < n; ++i) {
    double ss = 0;
    const size_t base = static_cast<size_t>(i) * d;
    for (int j = 0; j < d; ++j) {
      // The sum is rounded to BF16 as it is stored as the new residual; the
      // norm uses that stored value, as serving engines do.
      const float h = RoundToBf16(ToFloat(x[base + j]) + ToFloat(residual[base + j]));
      residual[base + j] = ToBf16(h);
      ss += double(h) * h;
    }
    const double inv = 1.0 / std::sqrt(ss / d + eps);
    for (int j = 0; j < d; ++j) {
      y[base + j] = static_cast<float>(ToFloat(residual[base + j]) * inv * ToFloat(w[j]));
    }
  }
}

void SiluMulCpu(int n, int d, const Bf16* gate_up, float* y) {
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < d; ++j) {
      const double g = ToFloat(gate_up[static_cast<size_t>(i) * 2 * d + j]);
      const double u = ToFloat(gate_up[static_cast<size_t>(i) * 2 * d + d + j]);
      y[static_cast<size_t>(i) * d + j] = static_cast<float>(g / (1.0 + std::exp(-g)) * u);
    }
  }
}

void RopeCpu(int n, int heads, int head_dim, int rope_offset, int rope_dim, float theta,
             const int32_t* positions, const Bf16* x, float* y) {
  const int half = rope_dim / 2;
  for (int i = 0; i < n; ++i) {
    for (int h = 0; h < heads; ++h) {
      const size_t base = (static_cast<size_t>(i) * heads + h) * head_dim;
      for (int j = 0; j < head_dim; ++j) y[base + j] = ToFloat(x[base + j]);
      for (int k = 0; k < half; ++k) {
        const double inv_freq = std::pow(double(theta), -2.0 * k / rope_dim);
        const double ang = positions[i] * inv_freq;
        const double c = std::cos(ang), s = std::sin(ang);
        const double a = ToFloat(x[base + rope_offset + k]);
        const double b = ToFloat(x[base + rope_offset + k + half]);
        y[base + rope_offset + k] = static_cast<float>(a * c - b * s);
        y[base + rope_offset + k + half] = static_cast<float>(b * c + a * s);
      }
    }
  }
}

}  // namespace capplan::kernels
