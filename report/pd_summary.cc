#include "report/pd_summary.h"

#include <set>

namespace capplan::report {
namespace {

std::string ValueText(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "default";
  return v.dump();
}

Status ParsePool(JsonObject& pools, const char* name, PdPool* out) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject p, pools.Child(name, true));
  CAPPLAN_RETURN_IF_ERROR(p.Get("gpus", &out->gpus, true));
  CAPPLAN_RETURN_IF_ERROR(p.Get("utilization", &out->utilization));
  // No upper bound: sim/pd divides busy time (warmup included) by the measured span.
  if (out->utilization < 0) return p.Error("utilization", "must be >= 0");
  CAPPLAN_RETURN_IF_ERROR(p.Get("kv_capacity_tokens", &out->kv_capacity_tokens));
  CAPPLAN_RETURN_IF_ERROR(p.Get("peak_kv_tokens", &out->peak_kv_tokens));
  CAPPLAN_RETURN_IF_ERROR(p.Get("mean_time_in_pool_ms", &out->mean_time_in_pool_ms));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject d, p.Child("deployment", true));
  CAPPLAN_RETURN_IF_ERROR(d.Get("replicas", &out->replicas));
  if (out->replicas < 1) return d.Error("replicas", "must be >= 1");
  CAPPLAN_RETURN_IF_ERROR(d.Get("weights", &out->weights));
  CAPPLAN_RETURN_IF_ERROR(d.Get("kv_cache", &out->kv_cache));
  if (p.Has("bound_time_share")) {
    CAPPLAN_RETURN_IF_ERROR(ParseTimeShares(p, "bound_time_share", &out->bound_time_share));
  }
  return Status::Ok();
}

}  // namespace

nlohmann::json MergePoolDeployments(const nlohmann::json& prefill, const nlohmann::json& decode) {
  nlohmann::json out = nlohmann::json::object();
  std::set<std::string> keys;
  for (const auto* d : {&prefill, &decode}) {
    for (auto it = d->begin(); it != d->end(); ++it) keys.insert(it.key());
  }
  for (const auto& k : keys) {
    if (k == "phase") continue;  // prefill_only / decode_only by construction
    const nlohmann::json a = prefill.value(k, nlohmann::json());
    const nlohmann::json b = decode.value(k, nlohmann::json());
    if (k == "replicas") {
      out[k] = ValueText(a) + "P:" + ValueText(b) + "D";
    } else if (a == b) {
      out[k] = a;
    } else {
      out[k] = "P:" + ValueText(a) + " D:" + ValueText(b);
    }
  }
  out["phase"] = "disaggregated";
  return out;
}

Status ParsePdFields(JsonObject& root, Summary* s) {
  PdInfo pd;
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject pools, root.Child("pools", true));
  CAPPLAN_RETURN_IF_ERROR(ParsePool(pools, "prefill", &pd.prefill));
  CAPPLAN_RETURN_IF_ERROR(ParsePool(pools, "decode", &pd.decode));
  if (root.Has("transfer")) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject t, root.Child("transfer"));
    CAPPLAN_RETURN_IF_ERROR(t.Get("link", &pd.link));
    CAPPLAN_RETURN_IF_ERROR(t.Get("mean_exposed_transfer_ms", &pd.mean_exposed_transfer_ms));
    CAPPLAN_RETURN_IF_ERROR(t.Get("p99_exposed_transfer_ms", &pd.p99_exposed_transfer_ms));
  }
  const nlohmann::json& pj = root.json()["pools"];
  s->deployment = MergePoolDeployments(pj["prefill"]["deployment"], pj["decode"]["deployment"]);
  // KV accumulates in the decode pool (prompts leave the prefill pool when
  // computed), so its capacity and peak are the ones that bind.
  s->kv_capacity_tokens = pd.decode.kv_capacity_tokens;
  s->peak_kv_tokens = pd.decode.peak_kv_tokens;
  s->bound_time_share = pd.prefill.utilization > pd.decode.utilization ? pd.prefill.bound_time_share
                                                                       : pd.decode.bound_time_share;
  s->pd = std::move(pd);
  return Status::Ok();
}

}  // namespace capplan::report
