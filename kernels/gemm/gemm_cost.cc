#include "kernels/gemm/gemm_cost.h"

namespace capplan::kernels {
namespace {
// Storage sizes are the definitions of the formats (IEEE/OCP: BF16 2 B,
// e4m3 1 B, INT4 half a byte; FP32 scales 4 B), not measured facts.
constexpr double kBf16Bytes = 2.0;
constexpr double kFp8Bytes = 1.0;
constexpr double kInt4Bytes = 0.5;
constexpr double kFp32Bytes = 4.0;
// DeepSeek-V3 checkpoints: 128x128 weight blocks, 1x128 activation groups
// (quantization_config of the DeepSeek-V3 config.json; deepseek-ai/DeepGEMM
// README.md).
constexpr int64_t kBlock = 128;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

const char* GemmWeightFormatName(GemmWeightFormat f) {
  switch (f) {
    case GemmWeightFormat::kBf16:
      return "bf16";
    case GemmWeightFormat::kFp8PerTensor:
      return "fp8";
    case GemmWeightFormat::kFp8Block128:
      return "fp8_block";
    case GemmWeightFormat::kInt4:
      return "int4";
  }
  return "?";
}

double WeightBytes(int64_t n, int64_t k, GemmWeightFormat f, int group, bool asymmetric) {
  const double nk = static_cast<double>(n) * static_cast<double>(k);
  switch (f) {
    case GemmWeightFormat::kBf16:
      return nk * kBf16Bytes;
    case GemmWeightFormat::kFp8PerTensor:
      return nk * kFp8Bytes + kFp32Bytes;
    case GemmWeightFormat::kFp8Block128:
      return nk * kFp8Bytes +
             kFp32Bytes * static_cast<double>(CeilDiv(n, kBlock) * CeilDiv(k, kBlock));
    case GemmWeightFormat::kInt4: {
      const double groups = static_cast<double>(n) * static_cast<double>(CeilDiv(k, group));
      return nk * kInt4Bytes + groups * kBf16Bytes * (asymmetric ? 2.0 : 1.0);
    }
  }
  return 0;
}

GemmCost DenseGemmCost(int64_t m, int64_t n, int64_t k, GemmWeightFormat f, int group,
                       bool asymmetric) {
  GemmCost c;
  c.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  c.weight_bytes = WeightBytes(n, k, f, group, asymmetric);
  const double mk = static_cast<double>(m) * static_cast<double>(k);
  switch (f) {
    case GemmWeightFormat::kBf16:
    case GemmWeightFormat::kInt4:
      c.act_bytes = mk * kBf16Bytes;
      break;
    case GemmWeightFormat::kFp8PerTensor:
      c.act_bytes = mk * kFp8Bytes + kFp32Bytes;
      break;
    case GemmWeightFormat::kFp8Block128:
      c.act_bytes = mk * kFp8Bytes + kFp32Bytes * static_cast<double>(m * CeilDiv(k, kBlock));
      break;
  }
  c.out_bytes = static_cast<double>(m) * static_cast<double>(n) * kBf16Bytes;
  return c;
}

}  // namespace capplan::kernels
