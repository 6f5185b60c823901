#include "hw/op_pricing.h"

#include <algorithm>

namespace capplan::hw {

namespace {

double Peak(MathRate rate, const HardwareProfile& p) {
  switch (rate) {
    case MathRate::kFp8:
      return p.fp8_flops_per_s;
    case MathRate::kFp4:
      return p.fp4_flops_per_s;
    case MathRate::kFp32:
      return p.fp32_flops_per_s;
    // kNone: CheckFormatRuns refuses the format before pricing; until then
    // it reads the 16-bit rate.
    case MathRate::kBf16:
    case MathRate::kNone:
      return p.bf16_flops_per_s;
  }
  return p.bf16_flops_per_s;
}

// The rate on the profile's architecture; without one (a profile or test
// that names none), the first architecture the format runs on.
MathRate Rate(const NumberFormat& f, int arch) {
  if (arch >= 0) return f.math[static_cast<size_t>(arch)];
  for (MathRate r : f.math) {
    if (r != MathRate::kNone) return r;
  }
  return MathRate::kNone;
}

}  // namespace

OpPricing PriceOp(const OpPricingInput& op, const HardwareProfile& p) {
  return PriceOp(op, p, ArchitectureIndex(p.architecture));
}

OpPricing PriceOp(const OpPricingInput& op, const HardwareProfile& p, int arch) {
  const FormatTable& t = Formats();
  const NumberFormat& w = t.RowOn(op.weights, arch);
  const MathRate rate = Rate(t.Row(op.compute), arch);
  OpPricing out;
  out.peak_flops_per_s = Peak(rate, p);
  // CheckFormatRuns refuses a format without its rate before pricing; a
  // profile missing one is priced at the 16-bit rate rather than divided by 0.
  if (out.peak_flops_per_s <= 0) out.peak_flops_per_s = p.bf16_flops_per_s;
  if (w.dequantize) out.peak_flops_per_s /= 1 + p.int4_dequant_compute_overhead;
  // Weights whose math runs at another rate than the compute format's (FP8
  // weights under BF16 math) use the 16-bit curves.
  const NumberFormat& cls = w.dequantize || Rate(w, arch) == rate ? w : t.Row(FormatId::kBf16);
  out.x = std::max(op.m, 1.0);
  switch (op.family) {
    case OpFamily::kDenseGemm:
      out.efficiency_class = cls.gemm_class;
      break;
    case OpFamily::kGroupedGemm:
      // W4A16 experts (Marlin-class MoE kernels) dequantize in the inner
      // loop: at decode's few rows per expert they stream packed weights far
      // below the rate a 16-bit grouped GEMM reaches, so their row names a
      // class of its own rather than the 16-bit curve at a quarter of the bytes.
      out.efficiency_class = cls.grouped_gemm_class;
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

Status CheckFormatRuns(FormatId format, const HardwareProfile& p) {
  if (p.architecture.empty()) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(const FormatTable* t, GetFormatTable());
  const NumberFormat& f = t->Row(format);
  const MathRate rate = RateOn(format, p.architecture);
  if (rate == MathRate::kNone) {
    return Status::Invalid(f.name + " runs on " + ArchitecturesRunning(format) +
                           " tensor cores; " + p.name + " is " + p.architecture +
                           " (pick another format or a profile of those architectures)");
  }
  if (p.has_cost_model && Peak(rate, p) <= 0) {
    return Status::Invalid(f.name + " runs at the " + MathRateName(rate) + " rate; profile " +
                           p.name + " has no compute." + MathRateName(rate) + "_flops_per_s");
  }
  return Status::Ok();
}

const std::vector<std::string>& EfficiencyClasses() {
  static const std::vector<std::string> kClasses = [] {
    std::vector<std::string> v;
    const auto add = [&v](const std::string& c) {
      if (!c.empty() && std::find(v.begin(), v.end(), c) == v.end()) v.push_back(c);
    };
    const FormatTable& t = Formats();
    for (const NumberFormat& f : t.rows) add(f.gemm_class);
    for (const NumberFormat& f : t.rows) add(f.grouped_gemm_class);
    for (const char* c : {"attention_decode", "attention_prefill", "elementwise"}) add(c);
    return v;
  }();
  return kClasses;
}

}  // namespace capplan::hw
