// One engine-profile version entry read from JSON: defaults, memory rules
// (with their ranges) and kernel choices, each value with its source.
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "common/json_util.h"
#include "hw/profile.h"
#include "models/engine_hybrid_rules.h"
#include "models/engine_profile_internal.h"

namespace capplan::models::internal {

const std::vector<std::pair<std::string, RuleMember>>& RangeableMembers() {
  using R = EngineMemoryRule;
  static const auto* t = new std::vector<std::pair<std::string, RuleMember>>{
      {"startup_bytes", &R::startup_bytes},
      {"dist_init_tp1_bytes", &R::dist_init_tp1_bytes},
      {"dist_init_bytes", &R::dist_init_bytes},
      {"nvls_bytes", &R::nvls_bytes},
      {"activation_base_bytes", &R::activation_base_bytes},
      {"sampler_bytes_per_element", &R::sampler_bytes_per_element},
      {"non_torch_tp1_bytes", &R::non_torch_tp1_bytes},
      {"non_torch_bytes", &R::non_torch_bytes},
      {"rotary_cache_bytes_per_element", &R::rotary_cache_bytes_per_element},
      {"mla_absorbed_copies", &R::mla_absorbed_copies},
  };
  return *t;
}

namespace {

// "range": [lo, hi] in the value's own type (booleans: [false, true]), with
// lo <= value <= hi.
template <typename T>
Result<TermRange> ParseRange(JsonObject& v, const char* key, T value) {
  const auto& names = RangeableMemoryTerms();
  if (std::find(names.begin(), names.end(), key) == names.end()) {
    return v.Error("range",
                   "only terms resting on one log or an assumption carry a range, and "
                   "this term is not one that can");
  }
  const nlohmann::json* raw = v.Raw("range");
  constexpr bool kBool = std::is_same_v<T, bool>;
  const auto ok = [&](const nlohmann::json& x) { return kBool ? x.is_boolean() : x.is_number(); };
  if (!raw->is_array() || raw->size() != 2 || !ok((*raw)[0]) || !ok((*raw)[1])) {
    return v.Error("range", std::string("must be [lo, hi] of ") + (kBool ? "booleans" : "numbers") +
                                ", got " + raw->dump());
  }
  const auto num = [&](const nlohmann::json& x) {
    if constexpr (kBool) return x.get<bool>() ? 1.0 : 0.0;
    return x.get<double>();
  };
  const TermRange r{num((*raw)[0]), static_cast<double>(value), num((*raw)[1])};
  if (!(r.lo <= r.value && r.value <= r.hi)) {
    return v.Error("range", "must hold lo <= value <= hi, got " + raw->dump() + " around " +
                                nlohmann::json(value).dump());
  }
  return r;
}

// Reads {"value": V, "source": "..."} at `key` (required) into *out and
// records its source under `prefix + key`. With `ranges`, an optional
// "range" is read too (and its source must say where it comes from).
template <typename T>
Status GetSourced(JsonObject& o, const std::string& prefix, const char* key, T* out,
                  std::map<std::string, std::string>* sources,
                  std::map<std::string, TermRange>* ranges = nullptr) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject v, o.Child(key, true));
  CAPPLAN_RETURN_IF_ERROR(v.Get("value", out, true));
  std::string source;
  CAPPLAN_RETURN_IF_ERROR(v.Get("source", &source, true));
  if (source.empty()) return v.Error("source", "every value names its source");
  (*sources)[prefix + key] = source;
  if constexpr (std::is_arithmetic_v<T>) {
    if (ranges != nullptr && v.Has("range")) {
      CAPPLAN_ASSIGN_OR_RETURN((*ranges)[key], ParseRange(v, key, *out));
      std::string lower = source;
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (lower.find("range") == std::string::npos) {
        return v.Error("source",
                       "a term with a range says in its source where the range "
                       "comes from");
      }
    }
  }
  return v.Finish();
}

// SGLang's new-token ratio and retraction keys: all or none (an engine
// without this admission rule leaves them out).
Status ParseRetraction(JsonObject& d, EngineProfile* p) {
  if (!d.Has("new_token_ratio_init")) return Status::Ok();
  EngineDefaults& o = p->defaults;
  auto& s = p->sources;
  const std::string pre = "defaults.";
  CAPPLAN_RETURN_IF_ERROR(GetSourced(d, pre, "new_token_ratio_init", &o.new_token_ratio_init, &s));
  CAPPLAN_RETURN_IF_ERROR(d.CheckRange("new_token_ratio_init", o.new_token_ratio_init, 1e-6, 1));
  CAPPLAN_RETURN_IF_ERROR(
      GetSourced(d, pre, "new_token_ratio_min_factor", &o.new_token_ratio_min_factor, &s));
  CAPPLAN_RETURN_IF_ERROR(
      d.CheckRange("new_token_ratio_min_factor", o.new_token_ratio_min_factor, 0, 1));
  struct Field {
    const char* key;
    int64_t* out;
  };
  for (const Field& f : {Field{"new_token_ratio_decay_steps", &o.new_token_ratio_decay_steps},
                         Field{"clip_max_new_tokens", &o.clip_max_new_tokens},
                         Field{"retract_decode_steps", &o.retract_decode_steps}}) {
    CAPPLAN_RETURN_IF_ERROR(GetSourced(d, pre, f.key, f.out, &s));
    CAPPLAN_RETURN_IF_ERROR(d.CheckRange(f.key, static_cast<double>(*f.out), 1, 1 << 24));
  }
  CAPPLAN_RETURN_IF_ERROR(GetSourced(d, pre, "retract_until", &o.retract_until, &s));
  return d.CheckOneOf("retract_until", o.retract_until,
                      {"decode_steps_headroom", "next_decode_fits"});
}

// Which prefill batches run MLA absorbed, by their summed cached prefix:
// both keys or none (the default, SGLang's Triton backend rule).
Status ParseMlaAbsorbedPrefix(JsonObject& d, EngineProfile* p) {
  const bool from = d.Has("mla_absorbed_prefix_from"), below = d.Has("mla_absorbed_prefix_below");
  if (!from && !below) return Status::Ok();
  if (from != below) {
    return d.Error(from ? "mla_absorbed_prefix_below" : "mla_absorbed_prefix_from",
                   "is needed beside its pair (the range [from, below) of summed cached "
                   "prefix tokens; below 0: unbounded)");
  }
  EngineDefaults& o = p->defaults;
  const std::string pre = "defaults.";
  MlaAbsorbedPrefix& r = o.mla_absorbed_prefix;
  CAPPLAN_RETURN_IF_ERROR(GetSourced(d, pre, "mla_absorbed_prefix_from", &r.from, &p->sources));
  CAPPLAN_RETURN_IF_ERROR(
      d.CheckRange("mla_absorbed_prefix_from", static_cast<double>(r.from), 0, 1 << 30));
  CAPPLAN_RETURN_IF_ERROR(GetSourced(d, pre, "mla_absorbed_prefix_below", &r.below, &p->sources));
  return d.CheckRange("mla_absorbed_prefix_below", static_cast<double>(r.below), 0, 1 << 30);
}

Status ParseDefaults(JsonObject& d, EngineProfile* p) {
  EngineDefaults& o = p->defaults;
  auto& s = p->sources;
  const std::string pre = "defaults.";
  struct Field {
    const char* key;
    int64_t* out;
    int64_t lo, hi;
  };
  const Field fields[] = {
      {"chunked_prefill_tokens", &o.chunked_prefill_tokens, 1, 1 << 24},
      {"page_size", &o.page_size, 1, 4096},
      {"page_size_sparse_attention", &o.page_size_sparse_attention, 1, 4096},
      {"cuda_graph_max_bs_small_tp", &o.cuda_graph_max_bs_small_tp, 0, 1 << 16},
      {"cuda_graph_max_bs_large_tp", &o.cuda_graph_max_bs_large_tp, 0, 1 << 16},
      {"cuda_graph_large_tp_from", &o.cuda_graph_large_tp_from, 1, 1024},
      {"max_running_requests_per_context", &o.max_running_per_context, 0, 1 << 20},
      {"max_running_requests_min", &o.max_running_min, 1, 1 << 24},
      {"max_running_requests_max", &o.max_running_max, 1, 1 << 24},
      {"speculative_max_draft_tokens", &o.speculative_max_draft_tokens, 1, 64},
      {"speculative_max_running_requests", &o.speculative_max_running_requests, 0, 1 << 24},
  };
  for (const Field& f : fields) {
    CAPPLAN_RETURN_IF_ERROR(GetSourced(d, pre, f.key, f.out, &s));
    if (*f.out < f.lo || *f.out > f.hi) {
      return d.Error(f.key, "value must be in [" + std::to_string(f.lo) + ", " +
                                std::to_string(f.hi) + "], got " + std::to_string(*f.out));
    }
  }
  if (o.max_running_min > o.max_running_max) {
    return d.Error("max_running_requests_min", "must not exceed max_running_requests_max");
  }
  CAPPLAN_RETURN_IF_ERROR(GetSourced(d, pre, "overlap_schedule", &o.overlap_schedule, &s));
  CAPPLAN_RETURN_IF_ERROR(GetSourced(d, pre, "prefix_cache", &o.prefix_cache, &s));
  CAPPLAN_RETURN_IF_ERROR(GetSourced(d, pre, "max_running_requests_split_over_dp",
                                     &o.max_running_split_over_dp, &s));
  if (d.Has("admit_whole_prompt")) {
    CAPPLAN_RETURN_IF_ERROR(GetSourced(d, pre, "admit_whole_prompt", &o.admit_whole_prompt, &s));
  }
  CAPPLAN_RETURN_IF_ERROR(
      GetSourced(d, pre, "speculative_overlap_schedule", &o.speculative_overlap_schedule, &s));
  CAPPLAN_RETURN_IF_ERROR(ParseRetraction(d, p));
  CAPPLAN_RETURN_IF_ERROR(ParseMlaAbsorbedPrefix(d, p));
  return d.Finish();
}

Status ParseBucket(JsonObject& b, SglangFractionBucket* out) {
  struct Field {
    const char* key;
    double* out;
  };
  const Field fields[] = {{"min_gpu_gib", &out->min_gpu_gib},
                          {"max_gpu_gib", &out->max_gpu_gib},
                          {"base_mib", &out->base_mib},
                          {"per_tp_pp_mib", &out->per_tp_pp_mib},
                          {"speculative_mib", &out->speculative_mib},
                          {"dp_attention_mib", &out->dp_attention_mib},
                          {"chunked_prefill_min", &out->chunked_prefill_min},
                          {"chunked_prefill_mib_per_token", &out->chunked_prefill_mib_per_token},
                          {"cuda_graph_mib_per_bs", &out->cuda_graph_mib_per_bs},
                          {"dp_mib_per_bs_rank", &out->dp_mib_per_bs_rank},
                          {"dp_extra_threshold_bs", &out->dp_extra_threshold_bs},
                          {"dp_extra_mib_per_bs_rank", &out->dp_extra_mib_per_bs_rank},
                          {"floor_mib", &out->floor_mib},
                          {"floor_above_gpu_mib", &out->floor_above_gpu_mib},
                          {"chunked_prefill_tokens", &out->chunked_prefill_tokens},
                          {"cuda_graph_max_bs", &out->cuda_graph_max_bs}};
  for (const Field& f : fields) {
    const bool required = std::string_view(f.key) == "min_gpu_gib" ||
                          std::string_view(f.key) == "max_gpu_gib" ||
                          std::string_view(f.key) == "base_mib";
    CAPPLAN_RETURN_IF_ERROR(b.Get(f.key, f.out, required));
    CAPPLAN_RETURN_IF_ERROR(b.CheckRange(f.key, *f.out, 0, 1e7));
  }
  CAPPLAN_RETURN_IF_ERROR(b.Get("kind", &out->kind, true));
  CAPPLAN_RETURN_IF_ERROR(b.CheckOneOf("kind", out->kind, {"fixed", "per_tp", "itemized"}));
  CAPPLAN_RETURN_IF_ERROR(b.Get("source", &out->source, true));
  return b.Finish();
}

Status ParseFraction(JsonObject& f, EngineProfile* p) {
  EngineMemoryRule& m = p->memory;
  CAPPLAN_RETURN_IF_ERROR(
      GetSourced(f, "memory.mem_fraction.", "round_decimals", &m.round_decimals, &p->sources));
  CAPPLAN_RETURN_IF_ERROR(f.CheckRange("round_decimals", m.round_decimals, -1, 9));
  const nlohmann::json* buckets = f.Raw("buckets");
  if (buckets == nullptr || !buckets->is_array() || buckets->empty()) {
    return f.Error("buckets", "must be a non-empty array");
  }
  for (size_t i = 0; i < buckets->size(); ++i) {
    JsonObject b((*buckets)[i], f.origin(), f.PathOf("buckets") + "/" + std::to_string(i));
    CAPPLAN_RETURN_IF_ERROR(b.CheckObject());
    SglangFractionBucket sb;
    CAPPLAN_RETURN_IF_ERROR(ParseBucket(b, &sb));
    m.buckets.push_back(sb);
  }
  return f.Finish();
}

Status ParseCopies(JsonObject& m, EngineProfile* p) {
  std::string copies;
  CAPPLAN_RETURN_IF_ERROR(
      GetSourced(m, "memory.", "shared_expert_fusion_copies", &copies, &p->sources));
  CAPPLAN_RETURN_IF_ERROR(m.CheckOneOf("shared_expert_fusion_copies", copies, {"one", "tp"}));
  p->memory.shared_expert_copies =
      copies == "tp" ? SharedExpertCopies::kPerTpRank : SharedExpertCopies::kOne;
  return Status::Ok();
}

Status ParseMemory(JsonObject& m, EngineProfile* p) {
  EngineMemoryRule& o = p->memory;
  auto& s = p->sources;
  auto* rg = &p->memory_ranges;
  const std::string pre = "memory.";
  std::string rule;
  CAPPLAN_RETURN_IF_ERROR(m.Get("rule", &rule, true));
  CAPPLAN_RETURN_IF_ERROR(
      m.CheckOneOf("rule", rule, {"sglang_static_fraction", "vllm_profile_run"}));
  o.kind = rule == "vllm_profile_run" ? MemoryRuleKind::kVllmProfileRun
                                      : MemoryRuleKind::kSglangStaticFraction;
  CAPPLAN_RETURN_IF_ERROR(m.Get("rule_source", &p->rule_source, true));
  CAPPLAN_RETURN_IF_ERROR(GetSourced(m, pre, "page_align", &o.page_align, &s, rg));
  CAPPLAN_RETURN_IF_ERROR(GetSourced(m, pre, "nvls_default", &o.nvls_default, &s, rg));
  CAPPLAN_RETURN_IF_ERROR(GetSourced(m, pre, "nvls_min_tp", &o.nvls_min_tp, &s, rg));
  CAPPLAN_RETURN_IF_ERROR(
      GetSourced(m, pre, "mla_absorbed_copies", &o.mla_absorbed_copies, &s, rg));
  CAPPLAN_RETURN_IF_ERROR(GetSourced(m, pre, "rotary_cache_bytes_per_element",
                                     &o.rotary_cache_bytes_per_element, &s, rg));
  CAPPLAN_RETURN_IF_ERROR(GetSourced(m, pre, "vocab_pad_multiple", &o.vocab_pad_multiple, &s, rg));
  CAPPLAN_RETURN_IF_ERROR(m.CheckRange("vocab_pad_multiple", o.vocab_pad_multiple, 1, 4096));
  CAPPLAN_RETURN_IF_ERROR(ParseCopies(m, p));
  struct Bytes {
    const char* key;
    int64_t* out;
  };
  std::vector<Bytes> bytes = {{"nvls_bytes", &o.nvls_bytes}};
  if (o.kind == MemoryRuleKind::kSglangStaticFraction) {
    bytes.push_back({"startup_bytes", &o.startup_bytes});
    bytes.push_back({"dist_init_tp1_bytes", &o.dist_init_tp1_bytes});
    bytes.push_back({"dist_init_bytes", &o.dist_init_bytes});
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject f, m.Child("mem_fraction", true));
    CAPPLAN_RETURN_IF_ERROR(ParseFraction(f, p));
  } else {
    bytes.push_back({"activation_base_bytes", &o.activation_base_bytes});
    bytes.push_back({"non_torch_tp1_bytes", &o.non_torch_tp1_bytes});
    bytes.push_back({"non_torch_bytes", &o.non_torch_bytes});
    CAPPLAN_RETURN_IF_ERROR(
        GetSourced(m, pre, "utilization_default", &o.utilization_default, &s, rg));
    CAPPLAN_RETURN_IF_ERROR(m.CheckRange("utilization_default", o.utilization_default, 0.01, 1));
    CAPPLAN_RETURN_IF_ERROR(GetSourced(m, pre, "null_block_pages", &o.null_block_pages, &s, rg));
    CAPPLAN_RETURN_IF_ERROR(GetSourced(m, pre, "cudagraph_counted", &o.cudagraph_counted, &s, rg));
    CAPPLAN_RETURN_IF_ERROR(
        GetSourced(m, pre, "sampler_bytes_per_element", &o.sampler_bytes_per_element, &s, rg));
    CAPPLAN_RETURN_IF_ERROR(
        m.CheckRange("sampler_bytes_per_element", o.sampler_bytes_per_element, 0, 1024));
    CAPPLAN_RETURN_IF_ERROR(GetSourced(m, pre, "moe_workspace", &o.moe_workspace, &s, rg));
  }
  for (const Bytes& b : bytes) {
    CAPPLAN_RETURN_IF_ERROR(GetSourced(m, pre, b.key, b.out, &s, rg));
    CAPPLAN_RETURN_IF_ERROR(m.CheckRange(b.key, static_cast<double>(*b.out), 0, 1e13));
  }
  CAPPLAN_RETURN_IF_ERROR(ParseHybridPools(m, p));
  return m.Finish();
}

// "kernels": {"<selector>": {"value": "<implementation>", "source": "..."}}.
Status ParseKernels(JsonObject& e, EngineProfile* p) {
  if (!e.Has("kernels")) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject k, e.Child("kernels", true));
  for (const auto& [sel, v] : e.Raw("kernels")->items()) {
    if (Status st = CheckKernelSelector(sel); !st.ok()) return k.Error(sel, st.message());
    CAPPLAN_RETURN_IF_ERROR(
        GetSourced(k, "kernels.", sel.c_str(), &p->kernel_names[sel], &p->sources));
  }
  auto choices = KernelChoices::FromSelectors(p->kernel_names);
  if (!choices.ok()) return k.Error("", choices.status().message());
  p->kernels = std::move(*choices);
  return k.Finish();
}

// "kernels_by_architecture": {"sm100": {"<selector>": {"value": ..., "source": ...}}}.
Status ParseArchitectureKernels(JsonObject& e, EngineProfile* p) {
  if (!e.Has("kernels_by_architecture")) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject a, e.Child("kernels_by_architecture", true));
  for (const auto& [arch, v] : e.Raw("kernels_by_architecture")->items()) {
    CAPPLAN_RETURN_IF_ERROR(a.CheckOneOf(arch, arch, hw::KnownArchitectures()));
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject k, a.Child(arch, true));
    std::map<std::string, std::string>& names = p->kernel_names_by_architecture[arch];
    const std::string prefix = "kernels_by_architecture." + arch + ".";
    for (const auto& [sel, x] : a.Raw(arch)->items()) {
      if (Status st = CheckKernelSelector(sel); !st.ok()) return k.Error(sel, st.message());
      CAPPLAN_RETURN_IF_ERROR(GetSourced(k, prefix, sel.c_str(), &names[sel], &p->sources));
    }
    if (auto c = KernelChoices::FromSelectors(p->KernelNamesFor(arch)); !c.ok()) {
      return k.Error("", c.status().message());
    }
    CAPPLAN_RETURN_IF_ERROR(k.Finish());
  }
  return a.Finish();
}

// "launch_backends": {"<field>": {"default": {"value", "source"}, "source",
//   "choices": {"<name>": {"source", "architectures"?: [...],
//                          "kernels": {"<selector>": "<implementation>"}}}}}.
Status ParseLaunchBackends(JsonObject& e, EngineProfile* p) {
  if (!e.Has("launch_backends")) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject l, e.Child("launch_backends", true));
  for (const auto& [field, fv] : e.Raw("launch_backends")->items()) {
    CAPPLAN_RETURN_IF_ERROR(l.CheckOneOf(field, field, LaunchBackendFields()));
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject f, l.Child(field, true));
    LaunchBackendFlag& flag = p->launch_backends[field];
    const std::string prefix = "launch_backends." + field + ".";
    CAPPLAN_RETURN_IF_ERROR(GetSourced(f, prefix, "default", &flag.default_name, &p->sources));
    flag.default_source = p->SourceOf(prefix + "default");
    CAPPLAN_RETURN_IF_ERROR(f.Get("source", &flag.source, true));
    if (flag.source.empty()) return f.Error("source", "every value names its source");
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject cs, f.Child("choices", true));
    for (const auto& [name, cv] : f.Raw("choices")->items()) {
      CAPPLAN_ASSIGN_OR_RETURN(JsonObject c, cs.Child(name, true));
      LaunchBackend& b = flag.choices[name];
      CAPPLAN_RETURN_IF_ERROR(c.Get("source", &b.source, true));
      if (b.source.empty()) return c.Error("source", "every value names its source");
      CAPPLAN_RETURN_IF_ERROR(c.Get("architectures", &b.architectures));
      for (const std::string& arch : b.architectures) {
        CAPPLAN_RETURN_IF_ERROR(c.CheckOneOf("architectures", arch, hw::KnownArchitectures()));
      }
      CAPPLAN_ASSIGN_OR_RETURN(JsonObject k, c.Child("kernels", true));
      for (const auto& [sel, x] : c.Raw("kernels")->items()) {
        if (Status st = CheckKernelSelector(sel); !st.ok()) return k.Error(sel, st.message());
        std::string& impl = b.kernel_names[sel];
        CAPPLAN_RETURN_IF_ERROR(k.Get(sel, &impl, true));
        if (impl.empty()) return k.Error(sel, "names no kernel implementation");
      }
      if (b.kernel_names.empty()) return c.Error("kernels", "names no kernel");
      CAPPLAN_RETURN_IF_ERROR(k.Finish());
      CAPPLAN_RETURN_IF_ERROR(c.Finish());
    }
    if (flag.choices.empty()) return f.Error("choices", "offers no backend");
    CAPPLAN_RETURN_IF_ERROR(cs.Finish());
    CAPPLAN_RETURN_IF_ERROR(f.Finish());
  }
  return l.Finish();
}

// "resident_weights": {"<implementation>.<format selector>": {"intermediate_multiple":
// 256, ..., "source": "..."}}: each key a kernel implementation and the weight
// format it runs, each rule with its source (ResidentWeightRule).
Status ParseResidentWeights(JsonObject& e, EngineProfile* p) {
  if (!e.Has("resident_weights")) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject r, e.Child("resident_weights", true));
  for (const auto& [key, v] : e.Raw("resident_weights")->items()) {
    const size_t dot = key.rfind('.');
    if (dot == std::string::npos || dot == 0) {
      return r.Error(key, "must be \"<implementation>.<format selector>\"");
    }
    CAPPLAN_RETURN_IF_ERROR(r.CheckOneOf(key, key.substr(dot + 1), SelectorFormats()));
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject x, r.Child(key, true));
    ResidentWeightRule rule;
    const std::pair<const char*, int*> multiples[] = {
        {"intermediate_multiple", &rule.intermediate_multiple},
        {"gate_up_hidden_multiple", &rule.gate_up_hidden_multiple},
        {"down_hidden_multiple", &rule.down_hidden_multiple},
        {"dense_n_multiple", &rule.dense_n_multiple}};
    for (const auto& [name, out] : multiples) {
      CAPPLAN_RETURN_IF_ERROR(x.Get(name, out));
      CAPPLAN_RETURN_IF_ERROR(x.CheckRange(name, *out, 1, 65536));
    }
    CAPPLAN_RETURN_IF_ERROR(x.Get("bias_bytes", &rule.bias_bytes));
    CAPPLAN_RETURN_IF_ERROR(x.CheckRange("bias_bytes", rule.bias_bytes, 0, 8));
    CAPPLAN_RETURN_IF_ERROR(x.Get("source", &rule.source, true));
    if (rule.source.empty()) return x.Error("source", "every value names its source");
    CAPPLAN_RETURN_IF_ERROR(x.Finish());
    p->resident_weights[key] = rule;
    p->sources["resident_weights." + key] = rule.source;
  }
  return r.Finish();
}

// "host_kv_tier": {"write_policies": [default, ...], "layerwise_load",
// "load_back_min_tokens", "source"}.
Status ParseHostKvTier(JsonObject& e, EngineProfile* p) {
  if (!e.Has("host_kv_tier")) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject h, e.Child("host_kv_tier", true));
  HostKvTierRule& r = p->host_kv_tier;
  CAPPLAN_RETURN_IF_ERROR(h.Get("write_policies", &r.write_policies, true));
  if (r.write_policies.empty()) return h.Error("write_policies", "needs at least one policy");
  for (const std::string& w : r.write_policies) {
    CAPPLAN_RETURN_IF_ERROR(h.CheckOneOf(
        "write_policies", w, {"write_through", "write_through_selective", "write_back"}));
  }
  CAPPLAN_RETURN_IF_ERROR(h.Get("layerwise_load", &r.layerwise_load, true));
  CAPPLAN_RETURN_IF_ERROR(h.Get("load_back_min_tokens", &r.load_back_min_tokens, true));
  CAPPLAN_RETURN_IF_ERROR(h.CheckRange("load_back_min_tokens",
                                       static_cast<double>(r.load_back_min_tokens), 0, 1e6));
  CAPPLAN_RETURN_IF_ERROR(h.Get("source", &r.source, true));
  if (r.source.empty()) return h.Error("source", "every value names its source");
  p->sources["host_kv_tier"] = r.source;
  return h.Finish();
}

// "micro_batch_overlap": {"flag", "requires_deepep", "decode_token_threshold",
// "prefill_token_threshold", "source"}.
Status ParseMicroBatchOverlap(JsonObject& e, EngineProfile* p) {
  if (!e.Has("micro_batch_overlap")) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, e.Child("micro_batch_overlap", true));
  MicroBatchOverlapRule& r = p->micro_batch_overlap;
  CAPPLAN_RETURN_IF_ERROR(o.Get("flag", &r.flag, true));
  if (r.flag.rfind("--", 0) != 0) {
    return o.Error("flag", "must be a launch flag, e.g. \"--enable-dbo\"");
  }
  CAPPLAN_RETURN_IF_ERROR(o.Get("requires_deepep", &r.requires_deepep, true));
  const std::pair<const char*, int64_t*> thresholds[] = {
      {"decode_token_threshold", &r.decode_token_threshold},
      {"prefill_token_threshold", &r.prefill_token_threshold}};
  for (const auto& [key, out] : thresholds) {
    CAPPLAN_RETURN_IF_ERROR(o.Get(key, out, true));
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange(key, static_cast<double>(*out), 2, 1 << 24));
  }
  CAPPLAN_RETURN_IF_ERROR(o.Get("source", &r.source, true));
  if (r.source.empty()) return o.Error("source", "every value names its source");
  p->sources["micro_batch_overlap"] = r.source;
  return o.Finish();
}

// How the version splits routed (and redundant) experts over EP ranks.
Status ParseExpertSplit(JsonObject& e, EngineProfile* p) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject x, e.Child("expert_parallel", true));
  CAPPLAN_RETURN_IF_ERROR(x.CheckObject());
  ExpertSplitRule& r = p->expert_split;
  const std::string pre = "expert_parallel.";
  CAPPLAN_RETURN_IF_ERROR(GetSourced(x, pre, "uneven_without_redundant",
                                     &r.uneven_without_redundant, &p->sources));
  CAPPLAN_RETURN_IF_ERROR(
      GetSourced(x, pre, "redundant_experts", &r.redundant_experts, &p->sources));
  CAPPLAN_RETURN_IF_ERROR(
      GetSourced(x, pre, "dense_ffn_per_dp_rank", &r.dense_ffn_per_dp_rank, &p->sources));
  CAPPLAN_RETURN_IF_ERROR(GetSourced(x, pre, "dense_ffn_per_dp_rank_flag",
                                     &r.dense_ffn_per_dp_rank_flag, &p->sources));
  CAPPLAN_RETURN_IF_ERROR(
      GetSourced(x, pre, "lm_head_per_dp_rank", &r.lm_head_per_dp_rank, &p->sources));
  CAPPLAN_RETURN_IF_ERROR(GetSourced(x, pre, "lm_head_per_dp_rank_flag",
                                     &r.lm_head_per_dp_rank_flag, &p->sources));
  return x.Finish();
}

}  // namespace

Status GetSourcedString(JsonObject& o, const std::string& prefix, const char* key, std::string* out,
                        std::map<std::string, std::string>* sources) {
  return GetSourced(o, prefix, key, out, sources);
}

Status ParseEngineEntry(const nlohmann::json& merged, const std::string& origin,
                        const std::string& ptr, EngineProfile* p) {
  JsonObject e(merged, origin, ptr);
  CAPPLAN_RETURN_IF_ERROR(e.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(e.Get("version", &p->version, true));
  CAPPLAN_ASSIGN_OR_RETURN(p->version_triple, ParseEngineVersion(p->version, e.PathOf("version")));
  CAPPLAN_RETURN_IF_ERROR(e.Get("source", &p->source, true));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject d, e.Child("defaults", true));
  CAPPLAN_RETURN_IF_ERROR(ParseDefaults(d, p));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject m, e.Child("memory", true));
  CAPPLAN_RETURN_IF_ERROR(ParseMemory(m, p));
  CAPPLAN_RETURN_IF_ERROR(ParseKernels(e, p));
  CAPPLAN_RETURN_IF_ERROR(ParseArchitectureKernels(e, p));
  CAPPLAN_RETURN_IF_ERROR(ParseResidentWeights(e, p));
  CAPPLAN_RETURN_IF_ERROR(ParseHostKvTier(e, p));
  CAPPLAN_RETURN_IF_ERROR(ParseMicroBatchOverlap(e, p));
  CAPPLAN_RETURN_IF_ERROR(ParseLaunchBackends(e, p));
  CAPPLAN_RETURN_IF_ERROR(ParseExpertSplit(e, p));
  return e.Finish();
}

}  // namespace capplan::models::internal
