#include "models/types.h"

#include <string>

#include "common/did_you_mean.h"

namespace capplan::models {

const std::vector<std::string>& WeightChoiceNames() {
  static const std::vector<std::string>* names = [] {
    auto* v = new std::vector<std::string>{"default"};
    auto t = hw::GetFormatTable();
    if (t.ok()) v->insert(v->end(), (*t)->weight_choices.begin(), (*t)->weight_choices.end());
    return v;
  }();
  return *names;
}

const char* DtypeName(Dtype d) { return hw::FormatName(d); }

Result<Dtype> ParseDtype(const std::string& s) { return hw::ParseFormat(s); }

Dtype DtypeFamily(Dtype d) { return hw::Formats().Row(d).family; }

WeightFormat WeightFormatOf(Dtype d) {
  const hw::NumberFormat& f = hw::Formats().Row(d);
  WeightFormat w;
  w.dtype = d;
  w.block_rows = f.scale.block_rows;
  w.block_cols = f.scale.block_cols;
  w.group_size = f.scale.group_size;
  w.symmetric = !f.scale.zero_point;
  if (!f.scale.granularity.empty()) w.scale_dtype = f.scale.format;
  return w;
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
