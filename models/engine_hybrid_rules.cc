#include "models/engine_hybrid_rules.h"

#include <string>

namespace capplan::models {

namespace {

using Local = HybridPoolRule::Local;
using Linear = HybridPoolRule::Linear;

Status ParseLocal(JsonObject& h, EngineProfile* p) {
  HybridPoolRule& r = p->memory.hybrid;
  std::string local = "per_token";
  CAPPLAN_RETURN_IF_ERROR(h.Get("local_attention", &local, true));
  CAPPLAN_RETURN_IF_ERROR(
      h.CheckOneOf("local_attention", local, {"per_token", "swa_ratio", "window_blocks"}));
  r.local = local == "swa_ratio"       ? Local::kSwaRatio
            : local == "window_blocks" ? Local::kWindowBlocks
                                       : Local::kPerToken;
  std::string source;
  CAPPLAN_RETURN_IF_ERROR(h.Get("local_source", &source, true));
  if (source.empty()) return h.Error("local_source", "every rule names its source");
  p->sources["memory.hybrid_pools.local"] = source;
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
  std::string linear;
  CAPPLAN_RETURN_IF_ERROR(h.Get("linear_state", &linear, true));
  CAPPLAN_RETURN_IF_ERROR(
      h.CheckOneOf("linear_state", linear, {"none", "ratio_of_rest", "state_block"}));
  r.linear = linear == "ratio_of_rest" ? Linear::kRatioOfRest
             : linear == "state_block" ? Linear::kStateBlock
                                       : Linear::kNone;
  std::string source;
  CAPPLAN_RETURN_IF_ERROR(h.Get("linear_source", &source, true));
  if (source.empty()) return h.Error("linear_source", "every rule names its source");
  p->sources["memory.hybrid_pools.linear"] = source;
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
