#include "kernels/gemm/gemm_cpu.h"

#include <string>

namespace capplan::kernels {
namespace {

// Dequantized operands in double: every product code*scale here is exact in
// double (<= 28 significant bits), so the only rounding left is summation.
std::vector<double> WeightsAsDouble(const GemmWeights& w) {
  const size_t nk = static_cast<size_t>(w.n) * w.k;
  std::vector<double> out(nk);
  switch (w.format) {
    case GemmWeightFormat::kBf16:
      for (size_t i = 0; i < nk; ++i) out[i] = ToFloat(w.bf16[i]);
      break;
    case GemmWeightFormat::kFp8PerTensor:
    case GemmWeightFormat::kFp8Block128:
      for (int r = 0; r < w.n; ++r) {
        for (int c = 0; c < w.k; ++c) {
          const size_t i = static_cast<size_t>(r) * w.k + c;
          out[i] = static_cast<double>(Fp8E4m3ToFloat(w.fp8.codes[i])) *
                   static_cast<double>(w.fp8.ScaleAt(r, c));
        }
      }
      break;
    case GemmWeightFormat::kInt4: {
      const Int4Weights& q = w.int4;
      const int gpr = q.groups_per_row();
      for (int r = 0; r < w.n; ++r) {
        for (int c = 0; c < w.k; ++c) {
          const size_t i = static_cast<size_t>(r) * w.k + c;
          const size_t g = static_cast<size_t>(r) * gpr + c / q.group;
          const int zero = q.symmetric ? kInt4SymBias : q.zeros[g];
          out[i] = static_cast<double>(static_cast<int>(Int4Nibble(q.packed.data(), i)) - zero) *
                   static_cast<double>(ToFloat(q.scales[g]));
        }
      }
      break;
    }
  }
  return out;
}

std::vector<double> ActivationsAsDouble(const GemmActivations& a) {
  const size_t mk = static_cast<size_t>(a.m) * a.k;
  std::vector<double> out(mk);
  if (a.format == GemmWeightFormat::kBf16 || a.format == GemmWeightFormat::kInt4) {
    for (size_t i = 0; i < mk; ++i) out[i] = ToFloat(a.bf16[i]);
  } else {
    for (int r = 0; r < a.m; ++r) {
      for (int c = 0; c < a.k; ++c) {
        const size_t i = static_cast<size_t>(r) * a.k + c;
        out[i] = static_cast<double>(Fp8E4m3ToFloat(a.fp8.codes[i])) *
                 static_cast<double>(a.fp8.ScaleAt(r, c));
      }
    }
  }
  return out;
}

}  // namespace

Result<GemmActivations> PrepareGemmActivations(const float* x, int m, int k,
                                               GemmWeightFormat format) {
  if (m <= 0 || k <= 0) {
    return Status::Invalid("PrepareGemmActivations: shape must be positive, got " +
                           std::to_string(m) + "x" + std::to_string(k));
  }
  GemmActivations a;
  a.format = format;
  a.m = m;
  a.k = k;
  switch (format) {
    case GemmWeightFormat::kBf16:
    case GemmWeightFormat::kInt4:
      a.bf16.resize(static_cast<size_t>(m) * k);
      for (size_t i = 0; i < a.bf16.size(); ++i) a.bf16[i] = ToBf16(x[i]);
      break;
    case GemmWeightFormat::kFp8PerTensor: {
      CAPPLAN_ASSIGN_OR_RETURN(a.fp8, QuantizeFp8(x, m, k, Fp8Blocking::PerTensor()));
      break;
    }
    case GemmWeightFormat::kFp8Block128: {
      // 1x128: one scale per token per 128 K (DeepGEMM's activations,
      // deepseek-ai/DeepGEMM README.md).
      CAPPLAN_ASSIGN_OR_RETURN(a.fp8, QuantizeFp8(x, m, k, Fp8Blocking::TokenGroup(128)));
      break;
    }
  }
  return a;
}

Status GemmCpuPrepared(const GemmWeights& w, const GemmActivations& a, float* y) {
  if (a.k != w.k) {
    return Status::Invalid("GemmCpu: activations have K=" + std::to_string(a.k) +
                           " but weights K=" + std::to_string(w.k));
  }
  if (a.format != w.format) {
    return Status::Invalid(std::string("GemmCpu: activations prepared for ") +
                           GemmWeightFormatName(a.format) + ", weights are " +
                           GemmWeightFormatName(w.format));
  }
  const std::vector<double> wd = WeightsAsDouble(w);
  const std::vector<double> xd = ActivationsAsDouble(a);
  for (int i = 0; i < a.m; ++i) {
    const double* xr = xd.data() + static_cast<size_t>(i) * a.k;
    for (int j = 0; j < w.n; ++j) {
      const double* wr = wd.data() + static_cast<size_t>(j) * w.k;
      double acc = 0.0;
      for (int c = 0; c < w.k; ++c) acc += xr[c] * wr[c];
      y[static_cast<size_t>(i) * w.n + j] = static_cast<float>(acc);
    }
  }
  return Status::Ok();
}

Status GemmCpu(const GemmWeights& w, const float* x, int m, float* y) {
  CAPPLAN_ASSIGN_OR_RETURN(GemmActivations a, PrepareGemmActivations(x, m, w.k, w.format));
  return GemmCpuPrepared(w, a, y);
}

void GemmCpuExact(const float* w, const float* x, int m, int n, int k, float* y) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int c = 0; c < k; ++c) {
        acc += static_cast<double>(x[static_cast<size_t>(i) * k + c]) *
               static_cast<double>(w[static_cast<size_t>(j) * k + c]);
      }
      y[static_cast<size_t>(i) * n + j] = static_cast<float>(acc);
    }
  }
}

}  // namespace capplan::kernels
