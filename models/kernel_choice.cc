#include "models/kernel_choice.h"

#include <algorithm>

#include "common/did_you_mean.h"
#include "models/ops.h"

namespace capplan::models {

namespace {

constexpr const char* kFamilyNames[] = {
    "moe",        "moe_ep",      "dense_gemm",          "attention_decode", "attention_prefill",
    "mla_decode", "mla_prefill", "mla_prefill_absorbed"};
// The SelectorFormats() index of every format row, by FormatId.
const std::vector<int>& SelectorIndexByFormat() {
  static const std::vector<int> kIndex = [] {
    std::vector<int> v;
    const std::vector<std::string>& names = SelectorFormats();
    for (const hw::NumberFormat& f : hw::Formats().rows) {
      auto it = std::find(names.begin(), names.end(), f.kernel_selector);
      v.push_back(it == names.end() ? 0 : static_cast<int>(it - names.begin()));
    }
    return v;
  }();
  return kIndex;
}

size_t FormatIndex(Dtype d) { return static_cast<size_t>(SelectorIndexByFormat()[static_cast<size_t>(d)]); }

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
    // No engine chooses among kernels for these: each is priced by its
    // efficiency class. No default, so a new op kind is placed here or
    // above before it builds (-Wswitch).
    case OpKind::kRouter:
    case OpKind::kDsaIndexer:
    case OpKind::kKvAppend:
    case OpKind::kKvVerify:
    case OpKind::kAllReduce:
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kAllToAll:
    case OpKind::kElementwise:
    case OpKind::kEmbedding:
    case OpKind::kSampling:
      return -1;
  }
  return -1;
}

}  // namespace

const std::vector<std::string>& SelectorFormats() {
  static const std::vector<std::string> kFormats = [] {
    std::vector<std::string> v;
    for (const hw::NumberFormat& f : hw::Formats().rows) {
      const std::string& s = f.kernel_selector;
      if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
    }
    return v;
  }();
  return kFormats;
}

const std::vector<std::string>& KernelSelectors() {
  static const std::vector<std::string> kSelectors = [] {
    std::vector<std::string> v;
    for (const char* f : kFamilyNames) {
      for (const std::string& d : SelectorFormats()) v.push_back(std::string(f) + "." + d);
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
    const size_t formats = SelectorFormats().size();
    std::vector<std::string>& family = c.names_[i / formats];
    family.resize(formats);
    family[i % formats] = impl;
    c.empty_ = false;
  }
  return c;
}

std::string_view KernelChoices::ForMoeEp(Dtype format) const {
  const std::vector<std::string>& ep = names_[static_cast<int>(KernelFamily::kMoeEp)];
  const size_t i = FormatIndex(format);
  return i < ep.size() && !ep[i].empty() ? std::string_view(ep[i])
                                         : For(OpKind::kGroupedGemm, format);
}

std::string_view KernelChoices::For(OpKind kind, Dtype format) const {
  const int f = FamilyIndex(kind);
  if (f < 0) return {};
  const std::vector<std::string>& names = names_[f];
  const size_t i = FormatIndex(format);
  return i < names.size() ? std::string_view(names[i]) : std::string_view();
}

}  // namespace capplan::models
