#include "models/kernel_choice.h"

#include <algorithm>

#include "common/did_you_mean.h"
#include "models/ops.h"

namespace capplan::models {

namespace {

constexpr const char* kFamilyNames[] = {
    "moe",        "moe_ep",      "dense_gemm",          "attention_decode", "attention_prefill",
    "mla_decode", "mla_prefill", "mla_prefill_absorbed"};
constexpr const char* kFormatNames[kSelectorFormats] = {"bf16", "fp8", "int4"};

int FormatIndex(Dtype d) {
  switch (d) {
    case Dtype::kFp8E4m3:
      return 1;
    case Dtype::kInt4:
      return 2;
    default:
      return 0;  // 16- and 32-bit formats select the 16-bit kernels
  }
}

// -1 when the op kind has no kernel choice.
int FamilyIndex(OpKind k) {
  switch (k) {
    case OpKind::kGroupedGemm:
      return static_cast<int>(KernelFamily::kMoe);
    case OpKind::kGemm:
      return static_cast<int>(KernelFamily::kDenseGemm);
    case OpKind::kAttentionDecode:
      return static_cast<int>(KernelFamily::kAttentionDecode);
    case OpKind::kAttentionPrefill:
      return static_cast<int>(KernelFamily::kAttentionPrefill);
    case OpKind::kMlaDecode:
      return static_cast<int>(KernelFamily::kMlaDecode);
    case OpKind::kMlaPrefill:
      return static_cast<int>(KernelFamily::kMlaPrefill);
    case OpKind::kMlaPrefillAbsorbed:
      return static_cast<int>(KernelFamily::kMlaPrefillAbsorbed);
    default:
      return -1;
  }
}

}  // namespace

const std::vector<std::string>& KernelSelectors() {
  static const std::vector<std::string> kSelectors = [] {
    std::vector<std::string> v;
    for (const char* f : kFamilyNames) {
      for (const char* d : kFormatNames) v.push_back(std::string(f) + "." + d);
    }
    return v;
  }();
  return kSelectors;
}

Status CheckKernelSelector(const std::string& selector) {
  const std::vector<std::string>& all = KernelSelectors();
  if (std::find(all.begin(), all.end(), selector) != all.end()) return Status::Ok();
  return Status::Invalid("unknown kernel selector '" + EchoValue(selector) + "'" +
                         DidYouMean(selector, all));
}

Result<KernelChoices> KernelChoices::FromSelectors(
    const std::map<std::string, std::string>& by_selector) {
  KernelChoices c;
  const std::vector<std::string>& all = KernelSelectors();
  for (const auto& [sel, impl] : by_selector) {
    CAPPLAN_RETURN_IF_ERROR(CheckKernelSelector(sel));
    const size_t i = std::find(all.begin(), all.end(), sel) - all.begin();
    if (impl.empty()) return Status::Invalid("kernel selector '" + sel + "' names no kernel");
    c.names_[i / kSelectorFormats][i % kSelectorFormats] = impl;
    c.empty_ = false;
  }
  return c;
}

std::string_view KernelChoices::ForMoeEp(Dtype format) const {
  const std::string& ep = names_[static_cast<int>(KernelFamily::kMoeEp)][FormatIndex(format)];
  return ep.empty() ? For(OpKind::kGroupedGemm, format) : std::string_view(ep);
}

std::string_view KernelChoices::For(OpKind kind, Dtype format) const {
  const int f = FamilyIndex(kind);
  if (f < 0) return {};
  return names_[f][FormatIndex(format)];
}

}  // namespace capplan::models
