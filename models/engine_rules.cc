#include "models/engine_rules.h"

#include <charconv>

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "common/did_you_mean.h"
#include "common/json_util.h"

namespace capplan {

Result<std::array<int, 3>> ParseEngineVersion(const std::string& v, const std::string& flag) {
  std::array<int, 3> out{0, 0, 0};
  std::string s = v;
  if (!s.empty() && s[0] == 'v') s = s.substr(1);
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    const char* b = s.data() + pos;
    const char* e = s.data() + s.size();
    auto r = std::from_chars(b, e, out[i]);
    if (r.ec != std::errc() || out[i] < 0) {
      return Status::Usage(flag + ": version must look like 0.5.4, got '" + v + "'");
    }
    pos = r.ptr - s.data();
    if (pos == s.size()) break;
    if (s[pos] != '.') return Status::Usage(flag + ": version must look like 0.5.4, got '" + v + "'");
    ++pos;
  }
  if (pos != s.size()) return Status::Usage(flag + ": version must look like 0.5.4, got '" + v + "'");
  return out;
}

namespace {

Status ParseBucket(JsonObject& b, SglangBucket* out) {
  double* fields[] = {&out->min_gpu_gib, &out->max_gpu_gib, &out->base_mib, &out->per_tp_pp_mib,
                      &out->speculative_mib, &out->dp_attention_mib, &out->chunked_prefill_min,
                      &out->chunked_prefill_mib_per_token, &out->cuda_graph_mib_per_bs,
                      &out->dp_mib_per_bs_rank, &out->dp_extra_threshold_bs,
                      &out->dp_extra_mib_per_bs_rank, &out->floor_mib, &out->floor_above_gpu_mib};
  const char* names[] = {"min_gpu_gib", "max_gpu_gib", "base_mib", "per_tp_pp_mib",
                         "speculative_mib", "dp_attention_mib", "chunked_prefill_min",
                         "chunked_prefill_mib_per_token", "cuda_graph_mib_per_bs",
                         "dp_mib_per_bs_rank", "dp_extra_threshold_bs", "dp_extra_mib_per_bs_rank",
                         "floor_mib", "floor_above_gpu_mib"};
  for (size_t i = 0; i < std::size(names); ++i) {
    CAPPLAN_RETURN_IF_ERROR(b.Get(names[i], fields[i], i < 3));
    CAPPLAN_RETURN_IF_ERROR(b.CheckRange(names[i], *fields[i], 0, 1e7));
  }
  CAPPLAN_RETURN_IF_ERROR(b.Get("chunked_prefill_default", &out->chunked_prefill_default));
  CAPPLAN_RETURN_IF_ERROR(b.Get("cuda_graph_max_bs_small_tp", &out->cuda_graph_max_bs_small_tp));
  CAPPLAN_RETURN_IF_ERROR(b.Get("cuda_graph_max_bs_large_tp", &out->cuda_graph_max_bs_large_tp));
  CAPPLAN_RETURN_IF_ERROR(b.Get("large_tp_from", &out->large_tp_from));
  CAPPLAN_RETURN_IF_ERROR(b.Get("source", &out->source, true));
  return b.Finish();
}

Status ParseRule(JsonObject& r, const std::string& engine, EngineRule* out) {
  out->engine = engine;
  CAPPLAN_RETURN_IF_ERROR(r.Get("name", &out->name, true));
  CAPPLAN_RETURN_IF_ERROR(r.Get("source", &out->source, engine == "sglang"));
  std::string minv, maxv;
  CAPPLAN_RETURN_IF_ERROR(r.Get("min_version", &minv, true));
  CAPPLAN_RETURN_IF_ERROR(r.Get("max_version", &maxv, true));
  CAPPLAN_ASSIGN_OR_RETURN(out->min_version, ParseEngineVersion(minv, r.PathOf("min_version")));
  out->open_ended = maxv.empty();
  if (!out->open_ended) {
    CAPPLAN_ASSIGN_OR_RETURN(out->max_version, ParseEngineVersion(maxv, r.PathOf("max_version")));
  }
  if (engine == "sglang") {
    CAPPLAN_RETURN_IF_ERROR(r.Get("kind", &out->kind, true));
    CAPPLAN_RETURN_IF_ERROR(r.CheckOneOf("kind", out->kind, {"older", "newer"}));
    const nlohmann::json* buckets = r.Raw("buckets");
    if (buckets == nullptr || !buckets->is_array()) return r.Error("buckets", "must be an array");
    for (size_t i = 0; i < buckets->size(); ++i) {
      JsonObject b((*buckets)[i], r.origin(), r.PathOf("buckets") + "/" + std::to_string(i));
      CAPPLAN_RETURN_IF_ERROR(b.CheckObject());
      SglangBucket sb;
      CAPPLAN_RETURN_IF_ERROR(ParseBucket(b, &sb));
      out->buckets.push_back(sb);
    }
  } else {
    out->kind = "vllm";
    CAPPLAN_RETURN_IF_ERROR(r.Get("gpu_memory_utilization_default", &out->utilization_default, true));
    CAPPLAN_RETURN_IF_ERROR(r.CheckRange("gpu_memory_utilization_default",
                                         out->utilization_default, 0.01, 1.0));
    CAPPLAN_RETURN_IF_ERROR(r.Get("null_block_pages", &out->null_block_pages, true));
    CAPPLAN_RETURN_IF_ERROR(r.Get("max_num_seqs", &out->max_num_seqs, true));
    CAPPLAN_RETURN_IF_ERROR(
        r.Get("activation_bytes_per_element", &out->activation_bytes_per_element, true));
    CAPPLAN_RETURN_IF_ERROR(r.Get("logits_bytes_per_element", &out->logits_bytes_per_element, true));
    CAPPLAN_RETURN_IF_ERROR(r.Get("non_torch_bytes", &out->non_torch_bytes, true));
    CAPPLAN_RETURN_IF_ERROR(r.Get("cudagraph_bytes", &out->cudagraph_bytes, true));
    for (const char* k : {"version_source", "utilization_source", "null_block_source", "max_num_seqs_source",
                          "activation_source", "non_torch_source", "cudagraph_source"}) {
      std::string s;
      CAPPLAN_RETURN_IF_ERROR(r.Get(k, &s, true));  // every constant names its source
    }
  }
  return r.Finish();
}

}  // namespace

Result<EngineRules> ParseEngineRules(const std::string& json_text, const std::string& origin) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(json_text, origin));
  JsonObject root(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  root.Touch("format");
  root.Touch("comment");
  EngineRules out;
  for (const std::string engine : {"sglang", "vllm"}) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject e, root.Child(engine, true));
    CAPPLAN_RETURN_IF_ERROR(e.Get("latest", &out.latest[engine], true));
    std::string latest_source;
    CAPPLAN_RETURN_IF_ERROR(e.Get("latest_source", &latest_source, true));
    if (engine == "sglang") {
      CAPPLAN_RETURN_IF_ERROR(e.Get("page_align", &out.sglang_page_align, true));
      CAPPLAN_RETURN_IF_ERROR(e.Get("round_mem_fraction_decimals", &out.sglang_round_decimals, true));
      CAPPLAN_RETURN_IF_ERROR(e.Get("pre_kv_other_bytes", &out.sglang_pre_kv_other_bytes, true));
      for (const char* k : {"page_align_source", "round_source", "pre_kv_other_source"}) {
        std::string s;
        CAPPLAN_RETURN_IF_ERROR(e.Get(k, &s, true));
      }
    }
    const nlohmann::json* rules = e.Raw("rules");
    if (rules == nullptr || !rules->is_array()) return e.Error("rules", "must be an array");
    for (size_t i = 0; i < rules->size(); ++i) {
      JsonObject r((*rules)[i], origin, e.PathOf("rules") + "/" + std::to_string(i));
      CAPPLAN_RETURN_IF_ERROR(r.CheckObject());
      EngineRule rule;
      CAPPLAN_RETURN_IF_ERROR(ParseRule(r, engine, &rule));
      out.rules.push_back(std::move(rule));
    }
    CAPPLAN_RETURN_IF_ERROR(e.Finish());
  }
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  return out;
}

Result<const EngineRules*> GetEngineRules() {
  static const Result<EngineRules> kRules = []() -> Result<EngineRules> {
    const std::string path = DataPath("models/engine_rules.json");
    CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    return ParseEngineRules(text, path);
  }();
  if (!kRules.ok()) return kRules.status();
  return &kRules.value();
}

Result<const EngineRule*> FindEngineRule(const EngineRules& rules, const std::string& engine,
                                         const std::string& version, std::string* resolved) {
  auto lt = rules.latest.find(engine);
  if (lt == rules.latest.end()) {
    return Status::Usage("--engine: unknown engine '" + engine + "'" +
                         DidYouMean(engine, {"sglang", "vllm"}));
  }
  const std::string v = version.empty() ? lt->second : version;
  CAPPLAN_ASSIGN_OR_RETURN(auto parsed, ParseEngineVersion(v, "--engine-version"));
  std::string known;
  for (const EngineRule& r : rules.rules) {
    if (r.engine != engine) continue;
    auto fmt = [](const std::array<int, 3>& a) {
      return std::to_string(a[0]) + "." + std::to_string(a[1]) + "." + std::to_string(a[2]);
    };
    known += (known.empty() ? "" : ", ") + r.name + " " + fmt(r.min_version) + "-" +
             (r.open_ended ? std::string("") : fmt(r.max_version));
    if (parsed >= r.min_version && (r.open_ended || parsed <= r.max_version)) {
      if (resolved != nullptr) *resolved = v;
      return &r;
    }
  }
  return Status::Usage("--engine-version: no " + engine + " memory rule covers version " + v +
                       " (known: " + known + ")");
}

}  // namespace capplan
