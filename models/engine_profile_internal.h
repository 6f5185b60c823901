// Reading one engine-profile version entry (models/engines/<engine>.json)
// into an EngineProfile, shared by engine_profile.cc and
// engine_profile_entry.cc (not a public header).
#ifndef CAPPLAN_MODELS_ENGINE_PROFILE_INTERNAL_H_
#define CAPPLAN_MODELS_ENGINE_PROFILE_INTERNAL_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/json_util.h"
#include "common/status.h"
#include "models/engine_profile.h"

namespace capplan::models::internal {

using RuleMember = std::variant<int64_t EngineMemoryRule::*, double EngineMemoryRule::*,
                                int EngineMemoryRule::*, bool EngineMemoryRule::*>;

// The one list of memory terms that may carry a range, with the field each
// one sets.
const std::vector<std::pair<std::string, RuleMember>>& RangeableMembers();

// Reads {"value": "...", "source": "..."} at `key` (required) into *out
// and records its source under `prefix + key`.
Status GetSourcedString(JsonObject& o, const std::string& prefix, const char* key, std::string* out,
                        std::map<std::string, std::string>* sources);

// One version entry, already merged with the entries before it (JSON merge
// patch), read at `ptr` of `origin`.
Status ParseEngineEntry(const nlohmann::json& merged, const std::string& origin,
                        const std::string& ptr, EngineProfile* p);

}  // namespace capplan::models::internal

#endif  // CAPPLAN_MODELS_ENGINE_PROFILE_INTERNAL_H_
