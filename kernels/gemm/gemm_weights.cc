#include "kernels/gemm/gemm_weights.h"

#include <string>

namespace capplan::kernels {

double GemmWeights::StorageBytes() const {
  const int group = format == GemmWeightFormat::kInt4 ? int4.group : 128;
  const bool asym = format == GemmWeightFormat::kInt4 && !int4.symmetric;
  return WeightBytes(n, k, format, group, asym);
}

Result<GemmWeights> QuantizeGemmWeights(const float* w, int n, int k, GemmWeightFormat format,
                                        int group, bool symmetric) {
  if (n <= 0 || k <= 0) {
    return Status::Invalid("QuantizeGemmWeights: shape must be positive, got " + std::to_string(n) +
                           "x" + std::to_string(k));
  }
  GemmWeights out;
  out.format = format;
  out.n = n;
  out.k = k;
  switch (format) {
    case GemmWeightFormat::kBf16:
      out.bf16.resize(static_cast<size_t>(n) * k);
      for (size_t i = 0; i < out.bf16.size(); ++i) out.bf16[i] = ToBf16(w[i]);
      break;
    case GemmWeightFormat::kFp8PerTensor: {
      CAPPLAN_ASSIGN_OR_RETURN(out.fp8, QuantizeFp8(w, n, k, Fp8Blocking::PerTensor()));
      break;
    }
    case GemmWeightFormat::kFp8Block128: {
      CAPPLAN_ASSIGN_OR_RETURN(out.fp8, QuantizeFp8(w, n, k, Fp8Blocking::Block128()));
      break;
    }
    case GemmWeightFormat::kInt4: {
      CAPPLAN_ASSIGN_OR_RETURN(out.int4, QuantizeInt4(w, n, k, group, symmetric));
      break;
    }
  }
  return out;
}

std::vector<float> DequantizeGemmWeights(const GemmWeights& w) {
  std::vector<float> out(static_cast<size_t>(w.n) * w.k);
  switch (w.format) {
    case GemmWeightFormat::kBf16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = ToFloat(w.bf16[i]);
      break;
    case GemmWeightFormat::kFp8PerTensor:
    case GemmWeightFormat::kFp8Block128:
      DequantizeFp8(w.fp8, out.data());
      break;
    case GemmWeightFormat::kInt4:
      DequantizeInt4(w.int4, out.data());
      break;
  }
  return out;
}

}  // namespace capplan::kernels
