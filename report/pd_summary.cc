#include "report/pd_summary.h"

#include <set>

namespace capplan::report {
namespace {

std::string ValueText(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "default";
  return v.dump();
}

std::string Text(const nlohmann::json& d, const char* key) {
  const auto it = d.find(key);
  return it != d.end() && it->is_string() ? it->get<std::string>() : "";
}

Result<PdPool> PoolOf(const schema::RunSummary& run, schema::PoolRole role,
                      const std::string& origin) {
  const schema::PoolSummary* p = run.pool(role);
  const std::string name = schema::PoolRoleName(role);
  if (p == nullptr) {
    return Status::Usage(origin + ": /pools/" + name + ": required field is missing");
  }
  if (!p->deployment.is_object()) {
    return Status::Usage(origin + ": /pools/" + name + "/deployment: required field is missing");
  }
  PdPool out;
  out.gpus = p->gpus.value_or(0);
  out.utilization = p->utilization.value_or(0);
  out.replicas = p->deployment.value("replicas", 1);
  out.weights = Text(p->deployment, "weights");
  out.kv_cache = Text(p->deployment, "kv_cache");
  if (p->kv_capacity_tokens) out.kv_capacity_tokens = static_cast<double>(*p->kv_capacity_tokens);
  if (p->peak_kv_tokens) out.peak_kv_tokens = static_cast<double>(*p->peak_kv_tokens);
  const auto t = p->stages.find("time_in_pool");
  if (t != p->stages.end()) out.mean_time_in_pool_ms = t->second.mean;
  if (p->bound_time_share) out.bound_time_share = *p->bound_time_share;
  return out;
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

Status PdFields(const schema::RunSummary& run, Summary* s) {
  PdInfo pd;
  CAPPLAN_ASSIGN_OR_RETURN(pd.prefill, PoolOf(run, schema::PoolRole::kPrefill, s->origin));
  CAPPLAN_ASSIGN_OR_RETURN(pd.decode, PoolOf(run, schema::PoolRole::kDecode, s->origin));
  if (run.transfer) {
    pd.link = run.transfer->link.value_or("");
    pd.mean_exposed_transfer_ms = run.transfer->exposed_transfer.mean;
    pd.p99_exposed_transfer_ms = run.transfer->exposed_transfer.p99;
  }
  s->deployment = MergePoolDeployments(run.pool(schema::PoolRole::kPrefill)->deployment,
                                       run.pool(schema::PoolRole::kDecode)->deployment);
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
