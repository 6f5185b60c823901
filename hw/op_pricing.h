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

#include "common/status.h"
#include "hw/formats.h"
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

struct OpPricingInput {
  OpFamily family = OpFamily::kElementwise;
  // Rows of the format table (hw/formats.h): the stored weights and the
  // format the math runs in (W4A16: int4 and bf16).
  FormatId weights = FormatId::kBf16;
  FormatId compute = FormatId::kBf16;
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

// The compute rate comes from the compute format's row on the profile's
// architecture (a profile without one: the format's first architecture);
// the class from the weights' row when the weights run at that rate or are
// dequantized, else the 16-bit row's. The table must load (Formats()).
OpPricing PriceOp(const OpPricingInput& op, const HardwareProfile& p);
// The same with p.architecture already resolved (ArchitectureIndex): the
// simulator prices every op of every priced step, and resolves it once.
OpPricing PriceOp(const OpPricingInput& op, const HardwareProfile& p, int architecture_index);

// Invalid-config error unless `format`'s math runs on the profile's
// architecture and the profile has the rate it needs: "nvfp4 runs on sm100,
// sm103, sm120 tensor cores; h200-sxm is sm90". Ok for a profile without an
// architecture (memory only).
Status CheckFormatRuns(FormatId format, const HardwareProfile& p);

// Every efficiency class PriceOp can return: the format rows' GEMM classes,
// then attention and elementwise.
const std::vector<std::string>& EfficiencyClasses();

}  // namespace capplan::hw

#endif  // CAPPLAN_HW_OP_PRICING_H_
