#include "sim/pd/pd_scenario.h"

#include "common/json_util.h"
#include "sim/simulate.h"

namespace capplan {

namespace {

// The simulator's parser names "/deployment/..."; the user wrote
// "/pd/<pool>/...".
Status Repath(const Status& st, const std::string& pool) {
  std::string m = st.message();
  const std::string from = ": /deployment", to = ": /pd/" + pool;
  for (size_t at = m.find(from); at != std::string::npos; at = m.find(from, at + to.size())) {
    m.replace(at, from.size(), to);
  }
  switch (st.code()) {
    case StatusCode::kUsage: return Status::Usage(m);
    case StatusCode::kNotFound: return Status::NotFound(m);
    case StatusCode::kIoError: return Status::Io(m);
    case StatusCode::kInternal: return Status::Internal(m);
    default: return Status::Invalid(m);
  }
}

}  // namespace

bool IsPdScenario(const nlohmann::json& doc) { return doc.is_object() && doc.contains("pd"); }

Result<std::shared_ptr<const PdScenario>> ParsePdScenario(const nlohmann::json& doc,
                                                          const std::string& origin) {
  auto pd = std::make_shared<PdScenario>();
  pd->origin = origin;
  pd->doc = doc;
  if (!doc.is_object()) return Status::Usage(origin + ": the scenario must be a JSON object");
  if (doc.contains("deployment")) {
    return Status::Usage(origin +
                         ": /deployment: a PD scenario declares /pd/prefill and /pd/decode "
                         "instead of /deployment; remove /deployment");
  }
  JsonObject root(doc, origin, "");
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject p, root.Child("pd", true));
  nlohmann::json pools[2];
  const char* names[2] = {"prefill", "decode"};
  const char* phases[2] = {"prefill_only", "decode_only"};
  for (int i = 0; i < 2; ++i) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject pool, p.Child(names[i], true));
    (void)pool;
    pools[i] = doc["pd"][names[i]];
    if (pools[i].contains("phase") && pools[i]["phase"] != phases[i]) {
      return Status::Usage(origin + ": /pd/" + names[i] + "/phase: must be \"" + phases[i] +
                           "\" (or absent) in a PD pool");
    }
    pools[i]["phase"] = phases[i];
  }
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject t, p.Child("transfer"));
  CAPPLAN_RETURN_IF_ERROR(t.Get("link", &pd->transfer.link));
  CAPPLAN_RETURN_IF_ERROR(t.CheckOneOf("link", pd->transfer.link, {"nvlink", "rdma"}));
  CAPPLAN_RETURN_IF_ERROR(t.Get("layerwise_overlap", &pd->transfer.layerwise_overlap));
  CAPPLAN_RETURN_IF_ERROR(t.Finish());
  CAPPLAN_RETURN_IF_ERROR(p.Finish());

  for (int i = 0; i < 2; ++i) {
    nlohmann::json one = doc;
    one.erase("pd");
    one["deployment"] = pools[i];
    auto sc = ParseScenario(one, origin);
    if (!sc.ok()) return Repath(sc.status(), names[i]);
    (i == 0 ? pd->prefill : pd->decode) = *sc;
  }
  pd->name = pd->prefill->name;
  if (pd->prefill->model != pd->decode->model) {
    return Status::Internal(origin + ": pools parsed to different models");
  }
  // A concurrency cap (closed loop, max_concurrency) spans the whole
  // request: the decode pool, where requests enter and leave, enforces it
  // (sim/pd/pd_run.h).
  return std::shared_ptr<const PdScenario>(pd);
}

Result<std::shared_ptr<const PdScenario>> LoadPdScenarioFile(const std::string& path,
                                                             const std::vector<std::string>& sets) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  for (const std::string& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::Usage("--set '" + s + "': expected dotted.path=value, e.g. pd.decode.tp=4");
    }
    CAPPLAN_RETURN_IF_ERROR(SetDotted(&doc, s.substr(0, eq), s.substr(eq + 1), "--set"));
  }
  return ParsePdScenario(doc, path);
}

}  // namespace capplan
