// The "hybrid_pools" block of an engine profile's memory rule
// (HybridPoolRule in engine_profile.h).
#ifndef CAPPLAN_MODELS_ENGINE_HYBRID_RULES_H_
#define CAPPLAN_MODELS_ENGINE_HYBRID_RULES_H_

#include "common/json_util.h"
#include "common/status.h"
#include "models/engine_profile.h"

namespace capplan::models {

// Reads "hybrid_pools" (optional) from an entry's merged "memory" object
// into p->memory.hybrid; each half names its source, kept under
// "memory.hybrid_pools.local" and "memory.hybrid_pools.linear".
Status ParseHybridPools(JsonObject& memory, EngineProfile* p);

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_ENGINE_HYBRID_RULES_H_
