#include "kernels/harness/suite.h"

namespace capplan::kernels {

bool SuiteOptions::Selected(const std::string& shape_label) const {
  if (shape_filter.empty()) return true;
  for (const auto& f : shape_filter) {
    if (shape_label.find(f) != std::string::npos) return true;
  }
  return false;
}

Registry<SuiteFn>& SuiteRegistry() {
  static Registry<SuiteFn> registry("measurement suite");
  return registry;
}

void RegisterSuite(const std::string& name, SuiteFn fn, const std::string& help) {
  SuiteRegistry().Add(name, std::move(fn), help);
}

}  // namespace capplan::kernels
