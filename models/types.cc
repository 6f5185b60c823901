#include "models/types.h"

#include <array>
#include <string>

#include "common/did_you_mean.h"

namespace capplan::models {

const std::vector<std::string>& WeightChoiceNames() {
  static const std::vector<std::string>* names = [] {
    auto* v = new std::vector<std::string>{"default"};
    for (const char* f : kRequantizeFormats) v->push_back(f);
    return v;
  }();
  return *names;
}

const char* DtypeName(Dtype d) {
  switch (d) {
    case Dtype::kBf16: return "bf16";
    case Dtype::kFp16: return "fp16";
    case Dtype::kFp32: return "fp32";
    case Dtype::kFp8E4m3: return "fp8";
    case Dtype::kInt4: return "int4";
  }
  return "?";
}

Result<Dtype> ParseDtype(const std::string& s) {
  if (s == "bf16" || s == "bfloat16") return Dtype::kBf16;
  if (s == "fp16" || s == "float16") return Dtype::kFp16;
  if (s == "fp32" || s == "float32") return Dtype::kFp32;
  if (s == "fp8" || s == "fp8_e4m3") return Dtype::kFp8E4m3;
  if (s == "int4") return Dtype::kInt4;
  return Status::Usage("unknown dtype '" + EchoValue(s) + "'" +
                       DidYouMean(s, {"bf16", "fp16", "fp32", "fp8", "int4"}));
}

const char* ComponentName(Component c) {
  switch (c) {
    case Component::kAttention: return "attention";
    case Component::kExperts: return "experts";
    case Component::kSharedExperts: return "shared_experts";
    case Component::kDenseFfn: return "dense_ffn";
    case Component::kEmbeddings: return "embeddings";
    case Component::kRouter: return "router";
    case Component::kNorms: return "norms";
  }
  return "?";
}

const std::vector<Component>& AllComponents() {
  static const std::vector<Component> kAll = {
      Component::kAttention, Component::kExperts, Component::kSharedExperts,
      Component::kDenseFfn,  Component::kEmbeddings, Component::kRouter,
      Component::kNorms};
  return kAll;
}

Result<Component> ParseComponent(const std::string& s) {
  std::vector<std::string> names;
  for (Component c : AllComponents()) {
    if (s == ComponentName(c)) return c;
    names.push_back(ComponentName(c));
  }
  return Status::Usage("unknown component '" + EchoValue(s) + "'" + DidYouMean(s, names));
}

}  // namespace capplan::models
