// How the roofline prices an op on a hardware profile: which efficiency
// class (curve pair in the profile's "efficiency" block) it uses, its compute
// shape variable, and the peak rate its math runs at. The simulator's cost
// model classifies typed ops and calibration classifies measurement records
// through this one function, so a measurement always fits the curve the
// simulator prices that op with.
#ifndef CAPPLAN_HW_OP_PRICING_H_
#define CAPPLAN_HW_OP_PRICING_H_

#include <string>
#include <string_view>
#include <vector>

#include "hw/profile.h"

namespace capplan::hw {

// The kernel families the roofline distinguishes.
enum class OpFamily {
  kDenseGemm,         // GEMM-shaped: dense layers, router, LM head, embedding, sampling
  kGroupedGemm,       // MoE experts: m token-rows over `groups` experts
  kAttentionDecode,   // decode attention, MLA decode, DSA indexer, KV verification
  kAttentionPrefill,  // prefill attention (GQA or MLA)
  kElementwise,       // norms, activations, RoPE, KV append
};

// The number format an op's operands are in, as far as the roofline cares.
enum class MathFormat { k16Bit, kFp8, kFp32, kInt4 };

struct OpPricingInput {
  OpFamily family = OpFamily::kElementwise;
  MathFormat weights = MathFormat::k16Bit;
  MathFormat compute = MathFormat::k16Bit;
  double m = 1;         // token rows (GEMMs, elementwise)
  double groups = 0;    // experts touched (grouped GEMM)
  double heads = 1;     // query heads (decode attention)
  double q_tokens = 1;  // query tokens in the batch (attention)
};

struct OpPricing {
  // "gemm_bf16", "grouped_gemm", ... (a literal: no allocation per op
  // priced).
  std::string_view efficiency_class;
  double x = 1;                 // the class's compute shape variable (PROFILE.md)
  double peak_flops_per_s = 0;  // W4A16: 16-bit rate / (1 + dequant overhead)
};

OpPricing PriceOp(const OpPricingInput& op, const HardwareProfile& p);

// Every efficiency class PriceOp can return.
const std::vector<std::string>& EfficiencyClasses();

}  // namespace capplan::hw

#endif  // CAPPLAN_HW_OP_PRICING_H_
