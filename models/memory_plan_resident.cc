// Weights as resident (PlanMemory, models/memory_plan.cc): a checkpoint
// shard as the kernel the engine version runs for it keeps it on the GPU.
// The kernel is the engine profile's choice for the component's op family
// and weight format (models/engines/<engine>.json "kernels", per GPU
// architecture); its layout is the profile's "resident_weights" rule for
// that implementation and format (ResidentWeightRule, each with the
// weight-loading code it was read from). Shipped bytes stay what the
// checkpoint holds; the difference is one memory term.
#include <cstring>
#include <string>
#include <vector>

#include "hw/formats.h"
#include "models/dtype_facts.h"
#include "models/memory_plan_internal.h"
#include "models/weight_tensors.h"

namespace capplan::models::memory_plan_internal {

namespace {

int64_t RoundUpTo(int64_t v, int64_t m) { return m <= 1 ? v : (v + m - 1) / m * m; }

// The op family whose kernel runs a component's GEMMs, "" for none (norms,
// router, embeddings keep their shipped layout).
std::string FamilyOf(Component c, const ParallelLayout& l, const std::string& sel,
                     const std::map<std::string, std::string>& names) {
  switch (c) {
    case Component::kExperts:
      if (l.ep > 1 && names.count("moe_ep." + sel) > 0) return "moe_ep";
      return "moe";
    case Component::kAttention:
    case Component::kDenseFfn:
    case Component::kSharedExperts:
      return "dense_gemm";
    default:
      return "";
  }
}

std::string RuleText(const ResidentWeightRule& r, bool experts) {
  std::string s;
  const auto add = [&](const std::string& x) { s += (s.empty() ? "" : ", ") + x; };
  if (experts) {
    if (r.intermediate_multiple > 1) add("intermediate to x" + std::to_string(r.intermediate_multiple));
    if (r.gate_up_hidden_multiple > 1) {
      add("gate_up hidden to x" + std::to_string(r.gate_up_hidden_multiple));
    }
    if (r.down_hidden_multiple > 1) add("down hidden to x" + std::to_string(r.down_hidden_multiple));
    if (r.bias_bytes > 0) add("biases " + std::to_string(r.bias_bytes) + " B each");
  } else if (r.dense_n_multiple > 1) {
    add("output features to x" + std::to_string(r.dense_n_multiple));
  }
  return s.empty() ? "as shipped (no padding)" : s;
}

// One tensor's bytes per GPU, as shipped and as resident under `r`.
void AddTensor(const DtypeFacts& facts, const WeightTensor& t, const LocalShape& s,
               const WeightFormat& f, const ResidentWeightRule& r, ResidentComponent* out) {
  const int64_t shipped =
      s.count * (facts.Bytes(f.dtype, s.n * s.k) + TensorScaleBytes(facts, f, s.n, s.k));
  out->shipped_bytes += shipped;
  int64_t n = s.n, k = s.k;
  const std::string name = t.name;
  if (t.component == Component::kExperts) {
    if (name.rfind("moe.experts.gate_up_proj", 0) == 0) {
      n = RoundUpTo(s.n, r.intermediate_multiple);
      if (!t.is_norm_vector) k = RoundUpTo(s.k, r.gate_up_hidden_multiple);
    } else if (name.rfind("moe.experts.down_proj", 0) == 0) {
      n = RoundUpTo(s.n, r.down_hidden_multiple);
      if (!t.is_norm_vector) k = RoundUpTo(s.k, r.intermediate_multiple);
    }
    if (t.is_norm_vector && r.bias_bytes > 0) {
      out->resident_bytes += s.count * n * k * r.bias_bytes;
      return;
    }
  } else if (!t.is_norm_vector) {
    n = RoundUpTo(s.n, r.dense_n_multiple);
  }
  out->resident_bytes += s.count * (facts.Bytes(f.dtype, n * k) + TensorScaleBytes(facts, f, n, k));
}

}  // namespace

Result<std::vector<ResidentComponent>> ResidentWeights(const ModelCard& c, const ParallelLayout& l,
                                                       const WeightBreakdown& w,
                                                       const EngineProfile& prof,
                                                       const std::string& architecture) {
  std::vector<ResidentComponent> out;
  if (prof.resident_weights.empty()) return out;
  CAPPLAN_ASSIGN_OR_RETURN(const DtypeFacts* facts, GetDtypeFacts());
  const std::map<std::string, std::string> names =
      architecture.empty() ? prof.kernel_names : prof.KernelNamesFor(architecture);
  const std::vector<WeightTensor> tensors = ListWeightTensors(c);
  for (const ComponentWeights& cw : w.components) {
    const std::string sel = facts->Row(cw.format.dtype).kernel_selector;
    const std::string family = FamilyOf(cw.component, l, sel, names);
    if (family.empty()) continue;
    auto impl = names.find(family + "." + sel);
    if (impl == names.end() || impl->second.empty()) continue;
    const std::string key = impl->second + "." + sel;
    auto rule = prof.resident_weights.find(key);
    if (rule == prof.resident_weights.end()) continue;
    ResidentComponent rc;
    rc.component = cw.component;
    rc.implementation = impl->second;
    rc.rule_key = key;
    rc.rule = RuleText(rule->second, cw.component == Component::kExperts);
    rc.source = rule->second.source;
    for (const WeightTensor& t : tensors) {
      if (t.component != cw.component) continue;
      // 1-D weights (norms, biases) are stored in BF16 whatever the format.
      const WeightFormat f = t.is_norm_vector ? WeightFormat{} : cw.format;
      AddTensor(*facts, t, ShardTensor(c, t, l), f, rule->second, &rc);
    }
    out.push_back(std::move(rc));
  }
  return out;
}

MemoryTerm KernelLayoutTerm(const std::vector<ResidentComponent>& r) {
  MemoryTerm t{"kernel_layout_bytes",
               "weights as the kernels keep them: padding to tile multiples, re-typed biases",
               0, ""};
  for (const ResidentComponent& x : r) {
    if (x.resident_bytes == x.shipped_bytes) continue;
    t.bytes += x.resident_bytes - x.shipped_bytes;
    t.source += (t.source.empty() ? "" : "; ") + std::string(ComponentName(x.component)) + " on " +
                x.rule_key + " (" + x.rule + "): " + x.source;
  }
  return t;
}

}  // namespace capplan::models::memory_plan_internal
