#include "models/engine_hybrid_rules.h"

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace capplan::models {

namespace {

using Local = HybridPoolRule::Local;
using Linear = HybridPoolRule::Linear;

constexpr std::pair<const char*, Local> kLocalKinds[] = {{"per_token", Local::kPerToken},
                                                         {"swa_ratio", Local::kSwaRatio},
                                                         {"window_blocks", Local::kWindowBlocks}};
constexpr std::pair<const char*, Linear> kLinearKinds[] = {{"none", Linear::kNone},
                                                           {"ratio_of_rest", Linear::kRatioOfRest},
                                                           {"state_block", Linear::kStateBlock}};

// A rule's kind under `key`, one of `kinds` by name, and the source it
// names under "<pool>_source", kept as the profile's source of
// memory.hybrid_pools.<pool>.
template <class Kind, size_t N>
Status ReadRuleKind(JsonObject& h, const char* key, const std::pair<const char*, Kind> (&kinds)[N],
                    const std::string& pool, EngineProfile* p, Kind* out) {
  std::string kind;
  CAPPLAN_RETURN_IF_ERROR(h.Get(key, &kind, true));
  std::vector<std::string> names;
  for (const auto& [name, k] : kinds) {
    names.push_back(name);
    if (kind == name) *out = k;
  }
  CAPPLAN_RETURN_IF_ERROR(h.CheckOneOf(key, kind, names));
  const std::string source_key = pool + "_source";
  std::string source;
  CAPPLAN_RETURN_IF_ERROR(h.Get(source_key, &source, true));
  if (source.empty()) return h.Error(source_key, "every rule names its source");
  p->sources["memory.hybrid_pools." + pool] = source;
  return Status::Ok();
}

Status ParseLocal(JsonObject& h, EngineProfile* p) {
  HybridPoolRule& r = p->memory.hybrid;
  CAPPLAN_RETURN_IF_ERROR(ReadRuleKind(h, "local_attention", kLocalKinds, "local", p, &r.local));
  if (r.local == Local::kSwaRatio) {
    CAPPLAN_RETURN_IF_ERROR(h.Get("swa_full_tokens_ratio", &r.swa_full_tokens_ratio, true));
    CAPPLAN_RETURN_IF_ERROR(h.CheckRange("swa_full_tokens_ratio", r.swa_full_tokens_ratio, 0.01, 1));
    CAPPLAN_RETURN_IF_ERROR(
        h.Get("local_holds_whole_request", &r.local_holds_whole_request, true));
  } else {
    h.Touch("swa_full_tokens_ratio");
    h.Touch("local_holds_whole_request");
  }
  return Status::Ok();
}

Status ParseLinear(JsonObject& h, EngineProfile* p) {
  HybridPoolRule& r = p->memory.hybrid;
  CAPPLAN_RETURN_IF_ERROR(ReadRuleKind(h, "linear_state", kLinearKinds, "linear", p, &r.linear));
  const bool any = r.linear != Linear::kNone;
  CAPPLAN_RETURN_IF_ERROR(h.Get("ssm_state_dtype", &r.ssm_state_dtype, any));
  CAPPLAN_RETURN_IF_ERROR(h.CheckOneOf("ssm_state_dtype", r.ssm_state_dtype, {"fp32", "bf16", "model"}));
  CAPPLAN_RETURN_IF_ERROR(h.Get("conv_state_dtype", &r.conv_state_dtype, any));
  CAPPLAN_RETURN_IF_ERROR(h.CheckOneOf("conv_state_dtype", r.conv_state_dtype, {"fp32", "bf16", "model"}));
  const bool ratio = r.linear == Linear::kRatioOfRest;
  CAPPLAN_RETURN_IF_ERROR(h.Get("mamba_full_memory_ratio", &r.mamba_full_memory_ratio, ratio));
  CAPPLAN_RETURN_IF_ERROR(h.Get("state_slots_per_request", &r.state_slots_per_request, ratio));
  if (ratio) {
    CAPPLAN_RETURN_IF_ERROR(
        h.CheckRange("mamba_full_memory_ratio", r.mamba_full_memory_ratio, 0.01, 100));
    CAPPLAN_RETURN_IF_ERROR(h.CheckRange("state_slots_per_request", r.state_slots_per_request, 1, 64));
  }
  const bool blocks = r.linear == Linear::kStateBlock || r.local == Local::kWindowBlocks;
  CAPPLAN_RETURN_IF_ERROR(h.Get("block_alignment_tokens", &r.block_alignment_tokens, blocks));
  if (blocks) {
    CAPPLAN_RETURN_IF_ERROR(h.CheckRange("block_alignment_tokens", r.block_alignment_tokens, 1, 4096));
  }
  return Status::Ok();
}

}  // namespace

Status ParseHybridPools(JsonObject& memory, EngineProfile* p) {
  p->memory.hybrid = HybridPoolRule{};
  if (!memory.Has("hybrid_pools")) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject h, memory.Child("hybrid_pools", true));
  CAPPLAN_RETURN_IF_ERROR(h.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(ParseLocal(h, p));
  CAPPLAN_RETURN_IF_ERROR(ParseLinear(h, p));
  return h.Finish();
}

}  // namespace capplan::models
