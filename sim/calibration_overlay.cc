#include "sim/calibration_overlay.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "models/engine_step_costs.h"
#include "models/memory.h"
#include "sim/prediction_intervals.h"

namespace capplan::sim {
namespace {

// A step cost past one second, or a scale past 16x either way, is a unit
// mistake or a fit gone wrong, not a calibration.
constexpr double kMaxStepCostS = 1;
constexpr double kMaxScale = 16;

Status ResolveTermName(JsonObject& t, const std::string& name, OverlayTerm* out) {
  out->name = name;
  const std::string prefix = kKernelScalePrefix;
  if (name == kKvCapacityScaleTerm) {
    out->kind = OverlayTermKind::kKvCapacityScale;
    return Status::Ok();
  }
  if (name.rfind(prefix, 0) == 0) {
    out->kind = OverlayTermKind::kKernelScale;
    out->implementation = name.substr(prefix.size());
    if (out->implementation.empty()) {
      return t.Error("term", "names no kernel implementation: write kernel_scale.<implementation>");
    }
    return Status::Ok();
  }
  const std::vector<std::string>& keys = models::EngineStepCostKeys();
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == name) {
      out->kind = OverlayTermKind::kStepCost;
      out->step_cost_index = i;
      return Status::Ok();
    }
  }
  std::vector<std::string> allowed = keys;
  allowed.push_back(kKvCapacityScaleTerm);
  allowed.push_back(prefix + "<implementation>");
  return t.CheckOneOf("term", name, allowed);
}

Status ReadTerm(const nlohmann::json& j, const std::string& origin, const std::string& ptr,
                OverlayTerm* out) {
  JsonObject t(j, origin, ptr);
  CAPPLAN_RETURN_IF_ERROR(t.CheckObject());
  std::string name;
  CAPPLAN_RETURN_IF_ERROR(t.Get("term", &name, true));
  CAPPLAN_RETURN_IF_ERROR(ResolveTermName(t, name, out));
  CAPPLAN_RETURN_IF_ERROR(t.Get("prior", &out->prior, true));
  CAPPLAN_RETURN_IF_ERROR(t.Get("value", &out->value, true));
  CAPPLAN_RETURN_IF_ERROR(t.Get("moved", &out->moved));
  CAPPLAN_RETURN_IF_ERROR(t.Get("why", &out->why));
  const bool seconds = out->kind == OverlayTermKind::kStepCost;
  const double lo = seconds ? 0 : 1 / kMaxScale, hi = seconds ? kMaxStepCostS : kMaxScale;
  CAPPLAN_RETURN_IF_ERROR(t.CheckRange("prior", out->prior, lo, hi));
  CAPPLAN_RETURN_IF_ERROR(t.CheckRange("value", out->value, lo, hi));
  t.Touch("unit");
  return t.Finish();
}

Status ReadRunRow(const nlohmann::json& j, const std::string& origin, const std::string& ptr,
                  OverlayRunRow* out) {
  JsonObject r(j, origin, ptr);
  CAPPLAN_RETURN_IF_ERROR(r.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(r.Get("case", &out->case_name, true));
  CAPPLAN_RETURN_IF_ERROR(r.Get("label", &out->label, true));
  CAPPLAN_RETURN_IF_ERROR(r.Get("metric", &out->metric, true));
  CAPPLAN_RETURN_IF_ERROR(r.Get("measured", &out->measured, true));
  CAPPLAN_RETURN_IF_ERROR(r.Get("before", &out->before, true));
  CAPPLAN_RETURN_IF_ERROR(r.Get("after", &out->after, true));
  CAPPLAN_RETURN_IF_ERROR(r.Get("held_out_after", &out->held_out_after));
  CAPPLAN_RETURN_IF_ERROR(r.CheckRange("measured", out->measured, 1e-300, 1e300));
  return r.Finish();
}

Status ReadRun(const nlohmann::json& j, const std::string& origin, const std::string& ptr,
               CalibrationOverlay::Run* out) {
  JsonObject r(j, origin, ptr);
  CAPPLAN_RETURN_IF_ERROR(r.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(r.Get("case_file", &out->case_file));
  CAPPLAN_RETURN_IF_ERROR(r.Get("case", &out->case_name, true));
  CAPPLAN_RETURN_IF_ERROR(r.Get("label", &out->label, true));
  CAPPLAN_RETURN_IF_ERROR(r.Get("date", &out->date));
  CAPPLAN_RETURN_IF_ERROR(r.Get("source", &out->source));
  return r.Finish();
}

// Each element of the array at `key` read by `read` into `out`.
template <typename T, typename Read>
Status ReadList(JsonObject& o, const char* key, bool required, Read read, std::vector<T>* out) {
  const nlohmann::json* list = o.Raw(key);
  if (list == nullptr) {
    return required ? o.Error(key, "is required: a list (capplan calibrate --runs writes it)")
                    : Status::Ok();
  }
  if (!list->is_array()) return o.Error(key, "must be a list");
  for (size_t i = 0; i < list->size(); ++i) {
    T item;
    CAPPLAN_RETURN_IF_ERROR(
        read((*list)[i], o.origin(), o.PathOf(key) + "/" + std::to_string(i), &item));
    out->push_back(std::move(item));
  }
  return Status::Ok();
}

Status ReadBands(JsonObject& o, CalibrationOverlay* out) {
  if (!o.Has("bands")) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject b, o.Child("bands"));
  for (const auto& [group, v] : o.json().at("bands").items()) {
    if (std::find(kBandGroupNames.begin(), kBandGroupNames.end(), group) == kBandGroupNames.end()) {
      return b.Error(group, "not a band group: use throughput, ttft, tpot or e2el");
    }
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject g, b.Child(group));
    OverlayBand band;
    CAPPLAN_RETURN_IF_ERROR(g.Get("lo", &band.lo, true));
    CAPPLAN_RETURN_IF_ERROR(g.Get("hi", &band.hi, true));
    CAPPLAN_RETURN_IF_ERROR(g.Get("rows", &band.rows));
    CAPPLAN_RETURN_IF_ERROR(g.CheckRange("lo", band.lo, 1 / kMaxScale, 1));
    CAPPLAN_RETURN_IF_ERROR(g.CheckRange("hi", band.hi, 1, kMaxScale));
    CAPPLAN_RETURN_IF_ERROR(g.Finish());
    out->bands[group] = band;
  }
  return b.Finish();
}

Status ReadProvenance(JsonObject& root, CalibrationOverlay* o) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject p, root.Child("provenance", true));
  CAPPLAN_RETURN_IF_ERROR(p.Get("generated_by", &o->generated_by));
  CAPPLAN_RETURN_IF_ERROR(p.Get("created", &o->created));
  CAPPLAN_RETURN_IF_ERROR(ReadList(p, "runs", true, ReadRun, &o->runs));
  return p.Finish();
}

Status ReadHeldOut(JsonObject& root, CalibrationOverlay* o) {
  if (!root.Has("held_out")) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject h, root.Child("held_out"));
  CAPPLAN_RETURN_IF_ERROR(h.Get("unit", &o->held_out_unit));
  if (!o->held_out_unit.empty()) {
    CAPPLAN_RETURN_IF_ERROR(h.CheckOneOf("unit", o->held_out_unit, {"run", "concurrency"}));
  }
  CAPPLAN_RETURN_IF_ERROR(h.Get("before_pct", &o->held_out_before_pct));
  CAPPLAN_RETURN_IF_ERROR(h.Get("after_pct", &o->held_out_after_pct));
  return h.Finish();
}

Status CheckUniqueTerms(JsonObject& root, const CalibrationOverlay& o) {
  std::set<std::string> seen;
  for (size_t i = 0; i < o.terms.size(); ++i) {
    if (!seen.insert(o.terms[i].name).second) {
      return root.Error("terms", "lists '" + o.terms[i].name + "' twice (entry " +
                                     std::to_string(i) + "): keep one");
    }
  }
  return Status::Ok();
}

nlohmann::json TermToJson(const OverlayTerm& t) {
  nlohmann::json j = {{"term", t.name},
                      {"unit", t.kind == OverlayTermKind::kStepCost ? "s" : "ratio"},
                      {"prior", t.prior},
                      {"value", t.value},
                      {"moved", t.moved}};
  if (!t.why.empty()) j["why"] = t.why;
  return j;
}

}  // namespace

Result<CalibrationOverlay> ParseCalibrationOverlay(const nlohmann::json& doc,
                                                   const std::string& origin) {
  CalibrationOverlay o;
  JsonObject root(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  std::string format;
  CAPPLAN_RETURN_IF_ERROR(root.Get("format", &format, true));
  if (format != kCalibrationOverlayFormat) {
    return root.Error("format", std::string("expected '") + kCalibrationOverlayFormat +
                                    "' (capplan calibrate --runs writes it), got '" +
                                    EchoValue(format) + "'");
  }
  CAPPLAN_RETURN_IF_ERROR(root.Get("engine", &o.engine, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("engine_version", &o.engine_version));
  CAPPLAN_RETURN_IF_ERROR(root.Get("hardware", &o.hardware, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("model", &o.model));
  CAPPLAN_RETURN_IF_ERROR(ReadProvenance(root, &o));
  CAPPLAN_RETURN_IF_ERROR(ReadList(root, "terms", true, ReadTerm, &o.terms));
  CAPPLAN_RETURN_IF_ERROR(CheckUniqueTerms(root, o));
  CAPPLAN_RETURN_IF_ERROR(ReadList(root, "rows", false, ReadRunRow, &o.rows));
  CAPPLAN_RETURN_IF_ERROR(ReadHeldOut(root, &o));
  CAPPLAN_RETURN_IF_ERROR(ReadBands(root, &o));
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  return o;
}

Result<CalibrationOverlay> ParseCalibrationOverlayText(std::string_view text,
                                                       const std::string& origin) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(text, origin));
  return ParseCalibrationOverlay(doc, origin);
}

nlohmann::json CalibrationOverlayToJson(const CalibrationOverlay& o) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : o.runs) {
    nlohmann::json j = {{"case", r.case_name}, {"label", r.label}};
    if (!r.case_file.empty()) j["case_file"] = r.case_file;
    if (!r.date.empty()) j["date"] = r.date;
    if (!r.source.empty()) j["source"] = r.source;
    runs.push_back(std::move(j));
  }
  nlohmann::json terms = nlohmann::json::array();
  for (const OverlayTerm& t : o.terms) terms.push_back(TermToJson(t));
  nlohmann::json rows = nlohmann::json::array();
  for (const OverlayRunRow& r : o.rows) {
    nlohmann::json j = {{"case", r.case_name}, {"label", r.label},   {"metric", r.metric},
                        {"measured", r.measured}, {"before", r.before}, {"after", r.after}};
    if (r.held_out_after) j["held_out_after"] = *r.held_out_after;
    rows.push_back(std::move(j));
  }
  nlohmann::json bands = nlohmann::json::object();
  for (const auto& [g, b] : o.bands) bands[g] = {{"lo", b.lo}, {"hi", b.hi}, {"rows", b.rows}};
  nlohmann::json doc = {
      {"format", kCalibrationOverlayFormat},
      {"engine", o.engine},
      {"engine_version", o.engine_version},
      {"hardware", o.hardware},
      {"model", o.model},
      {"provenance", {{"generated_by", o.generated_by}, {"created", o.created}, {"runs", runs}}},
      {"terms", terms},
      {"rows", rows},
      {"held_out",
       {{"unit", o.held_out_unit},
        {"before_pct", o.held_out_before_pct},
        {"after_pct", o.held_out_after_pct}}},
      {"bands", bands}};
  return doc;
}

void ApplyOverlayBands(const CalibrationOverlay& o, schema::RunSummary* summary) {
  const double occupancy =
      summary->window_occupancy && *summary->window_occupancy < kSteadyOccupancy
          ? std::max(*summary->window_occupancy, 1e-3)
          : 1.0;
  for (const std::string& key : schema::MetricKeys()) {
    const std::optional<BandGroup> g = BandGroupOf(key);
    if (!g) continue;
    auto band = o.bands.find(kBandGroupNames[static_cast<int>(*g)]);
    if (band == o.bands.end()) continue;
    const std::optional<double> x = schema::Metric(*summary, key);
    if (!x) continue;
    summary->intervals[key] = {*x * band->second.lo * occupancy,
                               *x * band->second.hi / occupancy};
  }
}

void ScaleKvPool(double scale, models::MemoryPlan* plan) {
  const int64_t page = std::max<int64_t>(1, plan->page_size);
  const auto scaled = [&](int64_t tokens) {
    return static_cast<int64_t>(std::floor(tokens * scale / page)) * page;
  };
  plan->kv_tokens_per_rank = std::max<int64_t>(page, scaled(plan->kv_tokens_per_rank));
  plan->kv_capacity_tokens = plan->kv_tokens_per_rank * plan->attention_ranks;
  plan->kv_tokens_lo = scaled(plan->kv_tokens_lo);
  plan->kv_tokens_hi = scaled(plan->kv_tokens_hi);
  plan->kv_pool_bytes_per_gpu = static_cast<int64_t>(plan->kv_pool_bytes_per_gpu * scale);
}

}  // namespace capplan::sim
