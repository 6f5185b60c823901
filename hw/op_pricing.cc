#include "hw/op_pricing.h"

#include <algorithm>

namespace capplan::hw {

namespace {

double Peak(MathFormat compute, const HardwareProfile& p) {
  switch (compute) {
    case MathFormat::kFp8:
      return p.fp8_flops_per_s;
    case MathFormat::kFp32:
      return p.fp32_flops_per_s;
    default:
      return p.bf16_flops_per_s;  // 16-bit, and W4A16 multiplies at the 16-bit rate
  }
}

}  // namespace

OpPricing PriceOp(const OpPricingInput& op, const HardwareProfile& p) {
  OpPricing out;
  out.peak_flops_per_s = Peak(op.compute, p);
  if (op.weights == MathFormat::kInt4) out.peak_flops_per_s /= 1 + p.int4_dequant_compute_overhead;
  out.x = std::max(op.m, 1.0);
  switch (op.family) {
    case OpFamily::kDenseGemm:
      out.efficiency_class = op.weights == MathFormat::kInt4 ? "gemm_int4"
                             : op.weights == MathFormat::kFp8 && op.compute == MathFormat::kFp8
                                 ? "gemm_fp8"
                                 : "gemm_bf16";
      break;
    case OpFamily::kGroupedGemm:
      // W4A16 experts (Marlin-class MoE kernels) dequantize in the inner
      // loop: at decode's few rows per expert they stream packed weights far
      // below the rate a 16-bit grouped GEMM reaches, so they get their own
      // class rather than the 16-bit curve at a quarter of the bytes.
      out.efficiency_class = op.weights == MathFormat::kInt4 ? "grouped_gemm_int4" : "grouped_gemm";
      if (op.groups > 0) out.x = op.m / op.groups;
      break;
    case OpFamily::kAttentionDecode:
      out.efficiency_class = "attention_decode";
      out.x = std::max(op.heads, 1.0) * std::max(op.q_tokens, 1.0);
      break;
    case OpFamily::kAttentionPrefill:
      out.efficiency_class = "attention_prefill";
      out.x = std::max(op.q_tokens, 1.0);
      break;
    case OpFamily::kElementwise:
      out.efficiency_class = "elementwise";
      break;
  }
  return out;
}

const std::vector<std::string>& EfficiencyClasses() {
  static const std::vector<std::string> kClasses = {
      "gemm_bf16",         "gemm_fp8",         "gemm_int4",         "grouped_gemm",
      "grouped_gemm_int4", "attention_decode", "attention_prefill", "elementwise"};
  return kClasses;
}

}  // namespace capplan::hw
