#include "sim/kv_tiers.h"

#include <array>
#include <utility>

namespace capplan::sim {

namespace {

constexpr std::array<std::pair<prefix_cache::HostWritePolicy, const char*>, 3> kPolicies = {{
    {prefix_cache::HostWritePolicy::kWriteThrough, "write_through"},
    {prefix_cache::HostWritePolicy::kWriteThroughSelective, "write_through_selective"},
    {prefix_cache::HostWritePolicy::kWriteBack, "write_back"},
}};

Status ParseHostTier(JsonObject& t, const models::HostKvTierRule& rule, KvTiersSpec* out) {
  CAPPLAN_RETURN_IF_ERROR(t.Get("gib_per_gpu", &out->host_gib_per_gpu, true));
  CAPPLAN_RETURN_IF_ERROR(t.CheckRange("gib_per_gpu", out->host_gib_per_gpu, 0.001, 1e5));
  std::string policy = rule.write_policies.front();
  CAPPLAN_RETURN_IF_ERROR(t.Get("write_policy", &policy));
  CAPPLAN_RETURN_IF_ERROR(t.CheckOneOf("write_policy", policy, rule.write_policies));
  for (const auto& [p, name] : kPolicies) {
    if (policy == name) out->host_write_policy = p;
  }
  return t.Finish();
}

}  // namespace

nlohmann::json KvTiersJson(const KvTiersSpec& t) {
  nlohmann::json tiers = nlohmann::json::array();
  if (!t.has_host()) return tiers;
  std::string policy;
  for (const auto& [p, name] : kPolicies) {
    if (p == t.host_write_policy) policy = name;
  }
  tiers.push_back({{"tier", "host"}, {"gib_per_gpu", t.host_gib_per_gpu}, {"write_policy", policy}});
  return tiers;
}

Status ParseKvTiers(JsonObject& d, const models::EngineProfile& engine, const std::string& release,
                    KvTiersSpec* out) {
  // Null, as `--set deployment.kv_tiers=null` writes it, is no tiers.
  d.Touch("kv_tiers");
  if (!d.Has("kv_tiers")) return Status::Ok();
  const nlohmann::json* raw = d.Raw("kv_tiers");
  if (!raw->is_array()) {
    return d.Error("kv_tiers", "must be a list of tiers, e.g. [{\"tier\": \"host\", "
                               "\"gib_per_gpu\": 200}]");
  }
  bool seen_host = false;
  for (size_t i = 0; i < raw->size(); ++i) {
    JsonObject t((*raw)[i], d.origin(), d.PathOf("kv_tiers") + "/" + std::to_string(i));
    CAPPLAN_RETURN_IF_ERROR(t.CheckObject());
    std::string tier;
    CAPPLAN_RETURN_IF_ERROR(t.Get("tier", &tier, true));
    CAPPLAN_RETURN_IF_ERROR(t.CheckOneOf("tier", tier, {"host"}));
    if (seen_host) return t.Error("tier", "host is named twice: keep one entry");
    seen_host = true;
    if (!engine.host_kv_tier.present()) {
      return t.Error("tier", release + " has no host KV tier in capplan's engine profile "
                                       "(models/engines/*.json host_kv_tier): use an engine "
                                       "version that has one, or remove kv_tiers");
    }
    CAPPLAN_RETURN_IF_ERROR(ParseHostTier(t, engine.host_kv_tier, out));
  }
  return Status::Ok();
}

}  // namespace capplan::sim
