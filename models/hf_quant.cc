// Quantization configs: which linear modules each method quantizes, and to
// which card format. The decision is made per module from the config's own
// rules (targets, ignore / exclude lists), then gathered per component; a
// component whose modules disagree is an error, since a card holds one
// format per component.
//
// Rules every method shares, from how serving engines build the layers:
// MoE routers are built without a quantization config (vllm-project/vllm
// vllm/model_executor/models/deepseek_v2.py and qwen3_moe.py: the gate's
// quant_config=None), and the input embedding is no linear layer.
#include <set>
#include <string>

#include "models/hf_import_internal.h"

namespace capplan::models::hf {

namespace {

using ojson = nlohmann::ordered_json;

struct Group {
  std::vector<ModulePattern> targets;  // empty: every linear layer
  ojson format;
};

struct Rules {
  std::string method;
  std::vector<Group> groups;
  std::vector<ModulePattern> ignore;
  std::string ignore_key;
  bool experts_only = false;  // MXFP4 (gpt-oss): only the MoE experts
  bool lm_head = true;        // whether the method can quantize lm_head at all
  std::string source;         // one line naming the rule set
};

Result<std::vector<ModulePattern>> ReadPatterns(JsonObject& o, const std::string& key) {
  std::vector<ModulePattern> out;
  const nlohmann::json* raw = o.Raw(key);
  if (raw == nullptr || raw->is_null()) return out;
  if (!raw->is_array()) return o.Error(key, "must be a list of module names or patterns");
  for (const auto& v : *raw) {
    if (!v.is_string()) return o.Error(key, "must be a list of strings");
    auto p = ModulePattern::Make(v.get<std::string>());
    if (!p.ok()) return o.Error(key, p.status().message());
    out.push_back(*p);
  }
  return out;
}

ojson Int4(int64_t group, bool symmetric, const char* scale) {
  return ojson{{"dtype", "int4"}, {"group_size", group}, {"symmetric", symmetric},
               {"scale_dtype", scale}};
}

Status ReadFp8(JsonObject& o, Rules* r) {
  std::string fmt = "e4m3";
  CAPPLAN_RETURN_IF_ERROR(o.Get("fmt", &fmt));
  CAPPLAN_RETURN_IF_ERROR(o.CheckOneOf("fmt", fmt, {"e4m3"}));
  o.Touch("activation_scheme");  // activations' scales change no weight bytes
  std::vector<double> block;
  CAPPLAN_RETURN_IF_ERROR(o.Get("weight_block_size", &block));
  ojson f{{"dtype", "fp8"}};
  if (!block.empty()) {
    if (block.size() != 2 || block[0] < 1 || block[1] < 1) {
      return o.Error("weight_block_size", "must be [rows, cols]");
    }
    f["block_rows"] = static_cast<int64_t>(block[0]);
    f["block_cols"] = static_cast<int64_t>(block[1]);
  }
  f["scale_dtype"] = "fp32";
  r->groups.push_back({{}, f});
  r->ignore_key = o.Has("ignored_layers") ? "ignored_layers" : "modules_to_not_convert";
  CAPPLAN_ASSIGN_OR_RETURN(r->ignore, ReadPatterns(o, r->ignore_key));
  r->lm_head = false;  // vLLM's Fp8Config leaves ParallelLMHead unquantized
  const std::string scales = block.empty() ? "fp8 per-tensor scales"
                                            : "fp8 weight_block_size " + f["block_rows"].dump() +
                                                  "x" + f["block_cols"].dump();
  r->source = scales + ": every linear layer but routers and lm_head, less " + r->ignore_key;
  return o.Finish({"quant_method", "ignored_layers", "modules_to_not_convert"});
}

// compressed-tensors "weights" of one config group.
Result<ojson> CtWeights(JsonObject& w) {
  int64_t bits = 0, group = 0;
  std::string type = "int", strategy;
  bool symmetric = true;
  CAPPLAN_RETURN_IF_ERROR(w.Get("num_bits", &bits, true));
  CAPPLAN_RETURN_IF_ERROR(w.Get("type", &type));
  CAPPLAN_RETURN_IF_ERROR(w.Get("strategy", &strategy, true));
  CAPPLAN_RETURN_IF_ERROR(w.Get("group_size", &group));
  CAPPLAN_RETURN_IF_ERROR(w.Get("symmetric", &symmetric));
  std::vector<double> block;
  CAPPLAN_RETURN_IF_ERROR(w.Get("block_structure", &block));
  for (const char* k : {"dynamic", "actorder", "observer", "observer_kwargs", "zp_dtype",
                        "scale_dtype"}) {
    w.Touch(k);
  }
  CAPPLAN_RETURN_IF_ERROR(w.Finish());
  if (type == "int" && bits == 4 && strategy == "group" && group > 0) {
    return Int4(group, symmetric, "bf16");
  }
  if (type == "float" && bits == 8) {
    ojson f{{"dtype", "fp8"}};
    if (strategy == "block" && block.size() == 2) {
      f["block_rows"] = static_cast<int64_t>(block[0]);
      f["block_cols"] = static_cast<int64_t>(block[1]);
    } else if (strategy == "channel") {
      // One scale per output row: a block one row tall and as wide as any
      // K a card allows.
      f["block_rows"] = 1;
      f["block_cols"] = 65536;
    } else if (strategy != "tensor") {
      return w.Error("strategy", "FP8 weights with strategy '" + strategy +
                                     "' are not a card format (known: tensor, channel, block)");
    }
    f["scale_dtype"] = strategy == "channel" ? "bf16" : "fp32";
    return f;
  }
  if (type == "float" && bits == 4 && strategy == "tensor_group" && group == 16) {
    return ojson{{"dtype", "nvfp4"}};
  }
  return w.Error("num_bits", std::to_string(bits) + "-bit " + type + " weights with strategy '" +
                                 strategy + "' are not a card format (known: 4-bit int group, "
                                 "8-bit float tensor/channel/block, NVFP4 tensor_group 16)");
}

Status ReadCompressedTensors(JsonObject& o, Rules* r) {
  std::string format;
  CAPPLAN_RETURN_IF_ERROR(o.Get("format", &format));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject groups, o.Child("config_groups", true));
  for (const auto& [name, value] : groups.json().items()) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject g, groups.Child(name, true));
    Group out;
    std::vector<std::string> targets;
    CAPPLAN_RETURN_IF_ERROR(g.Get("targets", &targets, true));
    for (const auto& t : targets) {
      if (t == "Linear") continue;
      auto p = ModulePattern::Make(t);
      if (!p.ok()) return g.Error("targets", p.status().message());
      out.targets.push_back(*p);
    }
    if (out.targets.empty() && targets.size() != 1) {
      return g.Error("targets", "must name \"Linear\" or module patterns");
    }
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject w, g.Child("weights", true));
    CAPPLAN_ASSIGN_OR_RETURN(out.format, CtWeights(w));
    for (const char* k : {"input_activations", "output_activations", "format"}) g.Touch(k);
    CAPPLAN_RETURN_IF_ERROR(g.Finish());
    r->groups.push_back(std::move(out));
  }
  r->ignore_key = "ignore";
  CAPPLAN_ASSIGN_OR_RETURN(r->ignore, ReadPatterns(o, "ignore"));
  const nlohmann::json* sparsity = o.Raw("sparsity_config");
  if (sparsity != nullptr && !sparsity->is_null() && !sparsity->empty()) {
    return o.Error("sparsity_config", "sparse checkpoints are not modelled");
  }
  for (const char* k : {"kv_cache_scheme", "quantization_status", "global_compression_ratio",
                        "version", "provider", "transform_config"}) {
    o.Touch(k);
  }
  r->source = "compressed-tensors (" + format + "): config_groups targets, less ignore";
  return o.Finish({"quant_method"});
}

Status ReadModelopt(JsonObject& o, Rules* r) {
  std::string algo;
  CAPPLAN_RETURN_IF_ERROR(o.Get("quant_algo", &algo, true));
  if (algo == "FP8") {
    r->groups.push_back({{}, ojson{{"dtype", "fp8"}, {"scale_dtype", "fp32"}}});
  } else if (algo == "NVFP4") {
    r->groups.push_back({{}, ojson{{"dtype", "nvfp4"}}});
  } else {
    return o.Error("quant_algo", "unknown ModelOpt algorithm '" + algo + "' (known: FP8, NVFP4)");
  }
  o.Touch("group_size");  // NVFP4's 16 is the format's own (models/dtypes.json)
  o.Touch("kv_cache_quant_algo");  // the KV dtype is the deployment's choice
  r->ignore_key = "exclude_modules";
  CAPPLAN_ASSIGN_OR_RETURN(r->ignore, ReadPatterns(o, "exclude_modules"));
  r->source = "modelopt " + algo + ": every linear layer less exclude_modules";
  return o.Finish({"quant_method", "producer"});
}

Status ReadMxfp4(JsonObject& o, Rules* r) {
  r->groups.push_back({{}, ojson{{"dtype", "mxfp4"}}});
  r->experts_only = true;
  r->lm_head = false;
  r->ignore_key = "modules_to_not_convert";
  CAPPLAN_ASSIGN_OR_RETURN(r->ignore, ReadPatterns(o, "modules_to_not_convert"));
  r->source = "mxfp4: the MoE experts (transformers Mxfp4HfQuantizer, vLLM Mxfp4MoEMethod), "
              "less modules_to_not_convert";
  return o.Finish({"quant_method"});
}

Result<int64_t> IntGroup(JsonObject& o, const char* bits_key) {
  int64_t bits = 0, group = 0;
  CAPPLAN_RETURN_IF_ERROR(o.Get(bits_key, &bits, true));
  if (bits != 4) return o.Error(bits_key, "only 4-bit weights are a card format");
  CAPPLAN_RETURN_IF_ERROR(o.Get("group_size", &group, true));
  if (group <= 0) return o.Error("group_size", "per-channel (-1) groups are not a card format");
  return group;
}

Status ReadAwq(JsonObject& o, Rules* r) {
  const char* bits_key = o.Has("w_bit") ? "w_bit" : "bits";
  if (std::string(bits_key) == "w_bit") o.Touch("bits");
  if (o.Has("q_group_size")) o.Touch("group_size");
  CAPPLAN_ASSIGN_OR_RETURN(int64_t group, IntGroup(o, bits_key));
  bool zero_point = true;
  CAPPLAN_RETURN_IF_ERROR(o.Get("zero_point", &zero_point));
  r->groups.push_back({{}, Int4(group, !zero_point, "fp16")});
  r->ignore_key = "modules_to_not_convert";
  CAPPLAN_ASSIGN_OR_RETURN(r->ignore, ReadPatterns(o, "modules_to_not_convert"));
  r->lm_head = false;
  o.Touch("version");
  r->source = "awq: every linear layer of the decoder, less modules_to_not_convert";
  return o.Finish({"quant_method"});
}

Status ReadGptq(JsonObject& o, Rules* r) {
  CAPPLAN_ASSIGN_OR_RETURN(int64_t group, IntGroup(o, "bits"));
  bool sym = true, lm_head = false;
  CAPPLAN_RETURN_IF_ERROR(o.Get("sym", &sym));
  CAPPLAN_RETURN_IF_ERROR(o.Get("lm_head", &lm_head));
  r->groups.push_back({{}, Int4(group, sym, "fp16")});
  r->lm_head = lm_head;
  const nlohmann::json* dynamic = o.Raw("dynamic");
  if (dynamic != nullptr && !dynamic->is_null() && !dynamic->empty()) {
    return o.Error("dynamic", "per-module GPTQ overrides are not modelled");
  }
  if (o.Raw("modules_in_block_to_quantize") != nullptr) {
    return o.Error("modules_in_block_to_quantize", "partial GPTQ blocks are not modelled");
  }
  for (const char* k : {"desc_act", "static_groups", "true_sequential", "damp_percent",
                        "checkpoint_format", "model_name_or_path", "model_file_base_name",
                        "meta", "pack_dtype", "damp_auto_increment", "format"}) {
    o.Touch(k);
  }
  r->ignore_key = "modules_to_not_convert";
  CAPPLAN_ASSIGN_OR_RETURN(r->ignore, ReadPatterns(o, "modules_to_not_convert"));
  r->source = "gptq: every linear layer of the decoder" + std::string(lm_head ? " and lm_head" : "");
  return o.Finish({"quant_method"});
}

using Reader = Status (*)(JsonObject&, Rules*);
const std::vector<std::pair<std::string, Reader>>& Readers() {
  static const std::vector<std::pair<std::string, Reader>> kReaders = {
      {"fp8", ReadFp8},     {"compressed-tensors", ReadCompressedTensors},
      {"modelopt", ReadModelopt}, {"mxfp4", ReadMxfp4},
      {"awq", ReadAwq},     {"gptq", ReadGptq},
  };
  return kReaders;
}

// The format `rules` give module `m` ("" = unquantized).
std::string Decide(const Rules& r, const HfModule& m, const ojson** format) {
  *format = nullptr;
  if (m.component == Component::kRouter || m.name.ends_with("embed_tokens")) return "";
  if (r.experts_only && m.component != Component::kExperts) return "";
  if (m.name.ends_with("lm_head") && !r.lm_head) return "";
  for (const ModulePattern& p : r.ignore) {
    if (p.Matches(m.name)) return "";
  }
  for (const Group& g : r.groups) {
    bool hit = g.targets.empty();
    for (const ModulePattern& p : g.targets) hit = hit || p.Matches(m.name);
    if (hit) {
      *format = &g.format;
      return g.format.dump();
    }
  }
  return "";
}

// Every ignore / target pattern must name some module of the checkpoint.
Status CheckPatternsMatch(const JsonObject& o, const Rules& r, const std::vector<HfModule>& mods,
                          const std::vector<std::string>& index_modules) {
  auto any = [&](const ModulePattern& p) {
    for (const HfModule& m : mods) {
      if (p.Matches(m.name)) return true;
    }
    for (const std::string& n : index_modules) {
      if (p.Matches(n)) return true;
    }
    return false;
  };
  for (const ModulePattern& p : r.ignore) {
    if (!any(p)) {
      return o.Error(r.ignore_key, "pattern '" + p.text() + "' matches no module of this model");
    }
  }
  for (const Group& g : r.groups) {
    for (const ModulePattern& p : g.targets) {
      if (!any(p)) return o.Error("config_groups", "target '" + p.text() + "' matches no module");
    }
  }
  return Status::Ok();
}

std::string FormatText(const std::string& dumped) { return dumped.empty() ? "unquantized" : dumped; }

}  // namespace

std::vector<std::string> QuantMethodNames() {
  std::vector<std::string> out;
  for (const auto& [name, reader] : Readers()) out.push_back(name);
  return out;
}

Result<QuantPlan> PlanQuantization(const QuantSource& q, const ModelCard& card,
                                   const ModuleNaming& naming,
                                   const std::vector<std::string>& index_modules) {
  JsonObject o(q.json, q.path, q.pointer);
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  std::string method;
  CAPPLAN_RETURN_IF_ERROR(o.Get("quant_method", &method, true));
  Rules rules;
  for (const auto& [name, reader] : Readers()) {
    if (name == method) {
      rules.method = name;
      CAPPLAN_RETURN_IF_ERROR(reader(o, &rules));
    }
  }
  if (rules.method.empty()) {
    std::string known;
    for (const std::string& n : QuantMethodNames()) known += (known.empty() ? "" : ", ") + n;
    return o.Error("quant_method", "unknown quantization method '" + method + "' (known: " + known + ")");
  }
  const std::vector<HfModule> mods = ListHfModules(card, naming);
  CAPPLAN_RETURN_IF_ERROR(CheckPatternsMatch(o, rules, mods, index_modules));
  QuantPlan plan;
  plan.method = method;
  std::map<Component, std::pair<std::string, std::string>> seen;  // format, example module
  for (const HfModule& m : mods) {
    if (!m.served) continue;
    const ojson* format = nullptr;
    const std::string f = Decide(rules, m, &format);
    auto [it, fresh] = seen.emplace(m.component, std::make_pair(f, m.name));
    if (!fresh && it->second.first != f) {
      return o.Error(rules.ignore_key,
                     std::string("component '") + ComponentName(m.component) +
                         "' is partly quantized (" + it->second.second + ": " +
                         FormatText(it->second.first) + "; " + m.name + ": " + FormatText(f) +
                         "); a card holds one format per component");
    }
    if (fresh && format != nullptr) {
      plan.formats[m.component] = *format;
      plan.sources[m.component] = q.path + " " + q.pointer + ": " + rules.source;
    }
  }
  return plan;
}

}  // namespace capplan::models::hf
