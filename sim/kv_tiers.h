// KV tiers below the GPU a deployment names (`deployment.kv_tiers`): today
// a host-memory tier under the prefix cache, as SGLang's HiCache runs it.
//
//   "kv_tiers": [{"tier": "host", "gib_per_gpu": 200,
//                 "write_policy": "write_through"}]
//
// gib_per_gpu is the host pool each GPU's rank keeps (SGLang's
// --hicache-size, per rank); write_policy one the engine version supports
// (absent: the version's default). The engine profile says whether the
// version has the tier and how it loads (models::HostKvTierRule); the
// hardware profile gives the host link's bandwidth.
#ifndef CAPPLAN_SIM_KV_TIERS_H_
#define CAPPLAN_SIM_KV_TIERS_H_

#include <cstdint>
#include <string>

#include "common/json_util.h"
#include "common/status.h"
#include "common/units.h"
#include "models/engine_profile.h"
#include "sim/prefix_cache/prefix_cache.h"

namespace capplan::sim {

struct KvTiersSpec {
  double host_gib_per_gpu = 0;  // 0: no host tier
  prefix_cache::HostWritePolicy host_write_policy = prefix_cache::HostWritePolicy::kWriteThrough;
  bool has_host() const { return host_gib_per_gpu > 0; }
};

// The tiers as a scenario writes them (for the summary's deployment echo);
// an empty list without tiers.
nlohmann::json KvTiersJson(const KvTiersSpec& t);

// Reads d's optional "kv_tiers" for a deployment of `release` (e.g. "sglang
// 0.5.4", for errors) whose engine profile entry is `engine`.
Status ParseKvTiers(JsonObject& d, const models::EngineProfile& engine, const std::string& release,
                    KvTiersSpec* out);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_KV_TIERS_H_
