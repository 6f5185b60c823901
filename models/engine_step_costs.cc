#include "models/engine_step_costs.h"

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "common/json_util.h"
#include "models/engine_profile.h"

namespace capplan::models {

namespace {

constexpr char kFormat[] = "capplan.engine_step_costs.v1";

// {"value": ..., "provenance": {"kind": ..., "source": ...}} at `key`; the
// child object is returned so the caller may check the value before
// finishing it.
template <class T>
Result<JsonObject> ReadSourced(JsonObject& e, const std::string& key, T* out,
                               std::map<std::string, std::string>* sources) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject v, e.Child(key, true));
  CAPPLAN_RETURN_IF_ERROR(v.Get("value", out, true));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject p, v.Child("provenance", true));
  std::string kind, source;
  CAPPLAN_RETURN_IF_ERROR(p.Get("kind", &kind, true));
  CAPPLAN_RETURN_IF_ERROR(p.Get("source", &source, true));
  if (source.empty()) return p.Error("source", "every value names its source");
  CAPPLAN_RETURN_IF_ERROR(p.Finish());
  (*sources)[key] = kind + ": " + source;
  return v;
}

// A cost in seconds.
Status ReadCost(JsonObject& e, const std::string& key, double* out,
                std::map<std::string, std::string>* sources) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject v, ReadSourced(e, key, out, sources));
  // A step cost beyond a second is a unit mistake (ms or us given as s).
  CAPPLAN_RETURN_IF_ERROR(v.CheckRange("value", *out, 0, 1));
  return v.Finish();
}

// A fact about the host loop rather than a cost.
Status ReadFact(JsonObject& e, const std::string& key, std::string* out,
                std::map<std::string, std::string>* sources) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject v, ReadSourced(e, key, out, sources));
  return v.Finish();
}

Status ReadOutputStage(JsonObject& e, EngineStepCosts* c) {
  std::string stage;
  CAPPLAN_RETURN_IF_ERROR(ReadFact(e, "output_stage", &stage, &c->sources));
  for (OutputStage s : {OutputStage::kEngineLoop, OutputStage::kSeparateProcess}) {
    if (stage == OutputStageName(s)) {
      c->output_stage = s;
      return Status::Ok();
    }
  }
  return e.Error("output_stage", "value must be 'engine_loop' or 'separate_process', got '" +
                                     stage + "'");
}

Status ReadEntry(JsonObject& e, const std::string& engine, EngineStepCosts* c) {
  c->engine = engine;
  CAPPLAN_RETURN_IF_ERROR(e.Get("version", &c->version, true));
  auto triple = ParseEngineVersion(c->version, e.PathOf("version"));
  if (!triple.ok()) return e.Error("version", triple.status().message());
  c->version_triple = *triple;
  for (size_t i = 0; i < EngineStepCostKeys().size(); ++i) {
    CAPPLAN_RETURN_IF_ERROR(ReadCost(e, EngineStepCostKeys()[i], &c->Cost(i), &c->sources));
  }
  CAPPLAN_RETURN_IF_ERROR(ReadOutputStage(e, c));
  CAPPLAN_RETURN_IF_ERROR(ReadFact(e, "cpu", &c->cpu, &c->sources));
  return e.Finish();
}

}  // namespace

const char* OutputStageName(OutputStage s) {
  return s == OutputStage::kSeparateProcess ? "separate_process" : "engine_loop";
}

double& EngineStepCosts::Cost(size_t i) {
  double* fields[] = {&host_s, &cpu_schedule_s, &cpu_schedule_per_request_s,
                      &cpu_output_per_token_s};
  return *fields[i];
}

const std::vector<std::string>& EngineStepCostKeys() {
  static const std::vector<std::string> kKeys = {"host_s", "cpu_schedule_s",
                                                 "cpu_schedule_per_request_s",
                                                 "cpu_output_per_token_s"};
  return kKeys;
}

Result<std::map<std::string, std::vector<EngineStepCosts>>> ParseEngineStepCosts(
    const std::string& json_text, const std::string& origin) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(json_text, origin));
  JsonObject root(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  std::string format;
  CAPPLAN_RETURN_IF_ERROR(root.Get("format", &format, true));
  if (format != kFormat) {
    return root.Error("format", "expected '" + std::string(kFormat) + "', got '" + format + "'");
  }
  root.Touch("comment");
  root.Touch("generated_by");
  const nlohmann::json* engines = root.Raw("engines");
  if (engines == nullptr || !engines->is_object() || engines->empty()) {
    return root.Error("engines", "must be an object of engine -> entries");
  }
  std::map<std::string, std::vector<EngineStepCosts>> out;
  for (const auto& [engine, entries] : engines->items()) {
    const std::string ptr = "/engines/" + engine;
    if (!entries.is_array() || entries.empty()) {
      return Status::Invalid(origin + ": " + ptr + ": must be a non-empty array of entries");
    }
    std::vector<EngineStepCosts>& list = out[engine];
    for (size_t i = 0; i < entries.size(); ++i) {
      JsonObject e(entries[i], origin, ptr + "/" + std::to_string(i));
      CAPPLAN_RETURN_IF_ERROR(e.CheckObject());
      EngineStepCosts c;
      CAPPLAN_RETURN_IF_ERROR(ReadEntry(e, engine, &c));
      if (!list.empty() && !(list.back().version_triple < c.version_triple)) {
        return e.Error("version", c.version + " must be newer than the entry before it (" +
                                      list.back().version + ")");
      }
      list.push_back(std::move(c));
    }
  }
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  return out;
}

Result<EngineStepCosts> StepCostsFor(const std::string& engine, const std::array<int, 3>& version) {
  using Table = std::map<std::string, std::vector<EngineStepCosts>>;
  static const Result<Table> kTable = []() -> Result<Table> {
    const std::string path = DataPath("models/engine_step_costs.json");
    CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    return ParseEngineStepCosts(text, path);
  }();
  if (!kTable.ok()) return kTable.status();
  auto it = kTable->find(engine);
  if (it == kTable->end()) {
    return Status::Invalid(DataPath("models/engine_step_costs.json") +
                           ": /engines: no entry for '" + engine +
                           "'; add one to calibrate/step_costs_base.json and run "
                           "capplan calibrate --public");
  }
  return PickStepCosts(it->second, version);
}

const EngineStepCosts& PickStepCosts(const std::vector<EngineStepCosts>& entries,
                                     const std::array<int, 3>& version) {
  const EngineStepCosts* pick = &entries.front();
  for (const EngineStepCosts& c : entries) {
    if (c.version_triple <= version) pick = &c;
  }
  return *pick;
}

}  // namespace capplan::models
