#include "calibrate/public_validation.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include "calibrate/measurements.h"
#include "common/data_path.h"
#include "common/did_you_mean.h"
#include "common/json_util.h"
#include "schema/run_summary.h"
#include "sim/prepared_run.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "sim/step_pricer.h"

namespace capplan::calibrate {

namespace {


struct CaseRow {
  std::string label, pointer, skip;
  int64_t running_requests = 0, kv_tokens = 0;  // predict: decode_step
  std::vector<std::pair<std::string, double>> measured;
  std::shared_ptr<const sim::Scenario> scenario;  // null when skipped
};

// A comparison of two rows, by their index in Case::rows.
struct CaseComparison {
  std::string label, metric;
  size_t numerator = 0, denominator = 0;
};

struct Case {
  std::string path, name, cls, predict, measured_kind;
  PublicSource source;
  std::vector<CaseRow> rows;
  std::vector<CaseComparison> comparisons;
};

// Same status code, message rewritten.
Status Recode(const Status& st, const std::string& message) {
  switch (st.code()) {
    case StatusCode::kUsage:
      return Status::Usage(message);
    case StatusCode::kInvalidConfig:
      return Status::Invalid(message);
    case StatusCode::kNotFound:
      return Status::NotFound(message);
    case StatusCode::kIoError:
      return Status::Io(message);
    default:
      return Status::Internal(message);
  }
}

// A scenario error ("CASE: /deployment/tp: ...") as a path inside the case
// file ("CASE: /scenario/deployment/tp: ... (with /rows/2/set applied)").
Status InScenario(const Status& st, const std::string& path, const std::string& row_ptr,
                  bool has_set) {
  std::string m = st.message();
  const std::string pre = path + ": /";
  if (m.rfind(pre, 0) == 0) {
    m = path + ": /scenario/" + m.substr(pre.size());
  } else if (m.rfind(path + ": ", 0) == 0) {
    m = path + ": /scenario: " + m.substr(path.size() + 2);
  } else {
    m = path + ": /scenario: " + m;
  }
  if (has_set) m += " (with " + row_ptr + "/set applied)";
  return Recode(st, m);
}

bool IsName(const std::string& s) {
  return s.find('/') == std::string::npos && !s.ends_with(".json");
}

// Why a row cannot run yet: its hardware profile or model card (given by
// name) is not shipped. "" when both exist or are given as paths.
std::string MissingData(const nlohmann::json& doc) {
  std::string hw = hw::kDefaultProfileName;
  if (doc.contains("hardware") && doc["hardware"].is_string()) hw = doc["hardware"];
  // error_code overloads: a name too long for the file system is not shipped.
  std::error_code ec;
  if (IsName(hw) && !std::filesystem::exists(DataPath("calibrate/profiles/" + hw + ".json"), ec)) {
    return "profile " + EchoValue(hw) + " not found";
  }
  if (doc.contains("model") && doc["model"].is_string()) {
    const std::string model = doc["model"];
    if (IsName(model) &&
        !std::filesystem::exists(DataPath("models/cards/" + model + ".json"), ec)) {
      return "model card " + EchoValue(model) + " not found";
    }
  }
  return "";
}

Status ReadRow(const nlohmann::json& j, const Case& c, const nlohmann::json& scenario, int index,
               const PublicValidationOptions& opt, CaseRow* row) {
  row->pointer = "/rows/" + std::to_string(index);
  JsonObject r(j, c.path, row->pointer);
  CAPPLAN_RETURN_IF_ERROR(r.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(r.Get("label", &row->label, true));
  std::string note, skipped;
  CAPPLAN_RETURN_IF_ERROR(r.Get("note", &note));
  // A configuration the scenario format cannot express keeps its measured
  // figures in the case, listed with the reason instead of a prediction.
  CAPPLAN_RETURN_IF_ERROR(r.Get("skipped", &skipped));
  if (r.Has("skipped") && skipped.empty()) {
    return r.Error("skipped", "must be the reason the row is not run");
  }
  nlohmann::json doc = scenario;
  const nlohmann::json* set = r.Raw("set");
  if (set != nullptr) {
    if (!set->is_object()) return r.Error("set", "must be an object of dotted.path: value");
    for (const auto& [key, v] : set->items()) {
      CAPPLAN_RETURN_IF_ERROR(
          SetDotted(&doc, key, v.dump(), c.path + ": " + row->pointer + "/set"));
    }
  }
  if (c.predict == "decode_step") {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject b, r.Child("batch", true));
    CAPPLAN_RETURN_IF_ERROR(b.Get("running_requests", &row->running_requests, true));
    CAPPLAN_RETURN_IF_ERROR(
        b.CheckRange("running_requests", static_cast<double>(row->running_requests), 1, 1e6));
    CAPPLAN_RETURN_IF_ERROR(b.Get("kv_tokens", &row->kv_tokens, true));
    CAPPLAN_RETURN_IF_ERROR(b.CheckRange("kv_tokens", static_cast<double>(row->kv_tokens),
                                         static_cast<double>(row->running_requests), 1e12));
    CAPPLAN_RETURN_IF_ERROR(b.Finish());
  }
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject m, r.Child("measured", true));
  const std::vector<std::string> allowed = c.predict == "decode_step"
                                                ? std::vector<std::string>{"decode_step_ms"}
                                                : ValidationCaseMetrics();
  for (const auto& [key, v] : m.json().items()) {
    CAPPLAN_RETURN_IF_ERROR(m.CheckOneOf(key, key, allowed));
    double value = 0;
    CAPPLAN_RETURN_IF_ERROR(m.Get(key, &value, true));
    if (!(value > 0) || !std::isfinite(value)) {
      return m.Error(key, "must be a finite number > 0");
    }
    row->measured.push_back({key, value});
  }
  if (row->measured.empty()) return r.Error("measured", "needs at least one metric");
  // Table order: as `allowed` lists them (throughput, then TTFT, TPOT, ITL, E2E).
  auto rank = [&](const std::string& k) {
    return std::find(allowed.begin(), allowed.end(), k) - allowed.begin();
  };
  std::stable_sort(row->measured.begin(), row->measured.end(),
                   [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
  CAPPLAN_RETURN_IF_ERROR(r.Finish());
  if (!opt.hardware_files.empty()) {
    const std::string hw = doc.contains("hardware") && doc["hardware"].is_string()
                               ? doc["hardware"]
                               : hw::kDefaultProfileName;
    auto f = opt.hardware_files.find(hw);
    if (f != opt.hardware_files.end()) doc["hardware"] = f->second;
  }
  if (opt.adjust_scenario) CAPPLAN_RETURN_IF_ERROR(opt.adjust_scenario(&doc));
  // Parsed even when the row is skipped (parsing loads neither card nor
  // profile), so a case waiting for its profile is still checked now.
  auto sc = sim::ParseScenario(doc, c.path);
  if (!sc.ok()) return InScenario(sc.status(), c.path, row->pointer, set != nullptr);
  row->skip = skipped.empty() ? MissingData(doc) : skipped;
  if (row->skip.empty()) row->scenario = *sc;
  return Status::Ok();
}

size_t MetricIndex(const CaseRow& row, const std::string& metric) {
  for (size_t i = 0; i < row.measured.size(); ++i) {
    if (row.measured[i].first == metric) return i;
  }
  return row.measured.size();
}

// Which row a comparison names by label; labels are unique (ReadCase).
Status FindRow(const Case& c, JsonObject& o, const char* key, size_t* index) {
  std::string label;
  CAPPLAN_RETURN_IF_ERROR(o.Get(key, &label, true));
  std::vector<std::string> labels;
  for (size_t i = 0; i < c.rows.size(); ++i) {
    if (c.rows[i].label == label) {
      *index = i;
      return Status::Ok();
    }
    labels.push_back(c.rows[i].label);
  }
  return o.Error(key, "no row is labelled '" + EchoValue(label) + "'" + DidYouMean(label, labels));
}

Status ReadComparison(const nlohmann::json& j, int index, Case* c) {
  JsonObject o(j, c->path, "/comparisons/" + std::to_string(index));
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  CaseComparison k;
  CAPPLAN_RETURN_IF_ERROR(o.Get("label", &k.label, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("metric", &k.metric, true));
  CAPPLAN_RETURN_IF_ERROR(FindRow(*c, o, "numerator", &k.numerator));
  CAPPLAN_RETURN_IF_ERROR(FindRow(*c, o, "denominator", &k.denominator));
  CAPPLAN_RETURN_IF_ERROR(o.Finish());
  if (k.numerator == k.denominator) {
    return o.Error("denominator", "names the numerator's row; a comparison needs two rows");
  }
  for (size_t r : {k.numerator, k.denominator}) {
    const CaseRow& row = c->rows[r];
    if (MetricIndex(row, k.metric) == row.measured.size()) {
      std::string has;
      for (const auto& [m, v] : row.measured) has += (has.empty() ? "" : ", ") + m;
      return o.Error("metric", "row '" + row.label + "' does not measure '" + EchoValue(k.metric) +
                                   "' (it measures " + has + ")");
    }
  }
  c->comparisons.push_back(std::move(k));
  return Status::Ok();
}

Status ReadComparisons(const nlohmann::json* list, Case* c) {
  if (list == nullptr) return Status::Ok();
  if (!list->is_array()) {
    return Status::Usage(c->path + ": /comparisons: must be an array of {label, metric, " +
                         "numerator, denominator}");
  }
  for (size_t i = 0; i < list->size(); ++i) {
    CAPPLAN_RETURN_IF_ERROR(ReadComparison((*list)[i], static_cast<int>(i), c));
  }
  return Status::Ok();
}

// Comparisons name rows by label, so a label may not repeat.
Status CheckUniqueLabels(const Case& c) {
  for (size_t i = 0; i < c.rows.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (c.rows[i].label == c.rows[j].label) {
        return Status::Usage(c.path + ": " + c.rows[i].pointer + "/label: '" +
                             EchoValue(c.rows[i].label) + "' repeats the label of " +
                             c.rows[j].pointer);
      }
    }
  }
  return Status::Ok();
}

Result<Case> ReadCase(const std::string& path, const PublicValidationOptions& opt) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  Case c;
  c.path = path;
  JsonObject root(doc, path, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  std::string format, description;
  CAPPLAN_RETURN_IF_ERROR(root.Get("format", &format, true));
  if (format != "capplan.validation_case.v1") {
    return root.Error("format", "expected 'capplan.validation_case.v1', got '" + format + "'");
  }
  CAPPLAN_RETURN_IF_ERROR(root.Get("name", &c.name, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("description", &description, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("class", &c.cls, true));
  CAPPLAN_RETURN_IF_ERROR(root.CheckOneOf("class", c.cls, {"step", "serving", "energy"}));
  CAPPLAN_RETURN_IF_ERROR(root.Get("predict", &c.predict, true));
  CAPPLAN_RETURN_IF_ERROR(root.CheckOneOf("predict", c.predict, {"simulate", "decode_step"}));
  c.measured_kind = "reported";
  CAPPLAN_RETURN_IF_ERROR(root.Get("measured_kind", &c.measured_kind));
  CAPPLAN_RETURN_IF_ERROR(
      root.CheckOneOf("measured_kind", c.measured_kind, {"reported", "authors_fit"}));
  {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject s, root.Child("source", true));
    CAPPLAN_RETURN_IF_ERROR(ReadPublicSource(s, &c.source));
  }
  const nlohmann::json* scenario = root.Raw("scenario");
  if (scenario == nullptr || !scenario->is_object()) {
    return root.Error("scenario", "must be a scenario object (scenarios/README.md)");
  }
  const nlohmann::json* rows = root.Raw("rows");
  if (rows == nullptr || !rows->is_array() || rows->empty()) {
    return root.Error("rows", "must be a non-empty array of rows");
  }
  const nlohmann::json* comparisons = root.Raw("comparisons");
  // Where an imported case came from, and the engine's own observations
  // kept for calibration (calibrate/runs/README.md); not compared.
  const nlohmann::json* imported = root.Raw("import");
  if (imported != nullptr && !imported->is_object()) {
    return root.Error("import", "must be an object (capplan import-run writes it)");
  }
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  for (size_t i = 0; i < rows->size(); ++i) {
    CaseRow row;
    CAPPLAN_RETURN_IF_ERROR(ReadRow((*rows)[i], c, *scenario, static_cast<int>(i), opt, &row));
    c.rows.push_back(std::move(row));
  }
  CAPPLAN_RETURN_IF_ERROR(CheckUniqueLabels(c));
  CAPPLAN_RETURN_IF_ERROR(ReadComparisons(comparisons, &c));
  return c;
}

// The predicted value of every measured metric of one row.
// `band`: what the prediction's band is built from (sim/prediction_intervals.h).
Result<std::vector<double>> Predict(const Case& c, const CaseRow& row, sim::BandInputs* band) {
  std::vector<double> out;
  if (c.predict == "decode_step") {
    // The simulator's own step pricer: same ops, launch mode (CUDA graph up
    // to cuda_graph_max_bs), collectives and CPU-scheduling overlap.
    CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<sim::PreparedRun> run,
                             sim::PrepareRun(*row.scenario, 0, {}));
    sim::StepWork w;
    w.decode_n = row.running_requests;
    w.decode_ctx_sum = row.kv_tokens;
    const sim::StepCost cost = run->pricer().Price(w);
    *band = sim::BandInputsOfStep(cost);
    const double ms = cost.seconds * 1e3;
    for (size_t i = 0; i < row.measured.size(); ++i) out.push_back(ms);
    return out;
  }
  CAPPLAN_ASSIGN_OR_RETURN(sim::RunResult r, sim::RunScenario(*row.scenario, {}));
  *band = sim::BandInputsOf(r.summary);
  for (const auto& [metric, v] : row.measured) {
    const nlohmann::json s = schema::ToJson(r.summary);
    if (!s.contains(metric) || !s[metric].is_number()) {
      return Status::Internal(c.path + ": " + row.pointer + "/measured/" + metric +
                              ": the simulation summary has no number '" + metric + "'");
    }
    out.push_back(s[metric].get<double>());
  }
  return out;
}

// A comparison's ratios from its rows' measured and predicted values
// (`predicted[r]` is empty for a row that did not run).
PublicComparison Compare(const Case& c, const CaseComparison& k,
                         const std::vector<std::vector<double>>& predicted) {
  PublicComparison out;
  out.case_name = c.name;
  out.case_class = c.cls;
  out.label = k.label;
  out.metric = k.metric;
  const CaseRow& num = c.rows[k.numerator];
  const CaseRow& den = c.rows[k.denominator];
  out.numerator = num.label;
  out.denominator = den.label;
  const size_t ni = MetricIndex(num, k.metric), di = MetricIndex(den, k.metric);
  out.measured_ratio = num.measured[ni].second / den.measured[di].second;
  for (const CaseRow* r : {&num, &den}) {
    if (!r->skip.empty()) {
      out.skipped = "row '" + r->label + "' skipped";
      return out;
    }
  }
  const double pn = predicted[k.numerator][ni], pd = predicted[k.denominator][di];
  if (!(pd > 0) || !std::isfinite(pn / pd)) {
    out.skipped = "predicted " + k.metric + " of row '" + den.label + "' is not > 0";
    return out;
  }
  out.predicted_ratio = pn / pd;
  out.difference = out.predicted_ratio - out.measured_ratio;
  return out;
}

// Runs every row of one case, then its comparisons, adding to `v` and to
// the case's class summary (sums; RunPublicValidation takes the means).
Status RunCase(const Case& c, PublicValidation* v, PublicClassSummary* cls) {
  std::vector<std::vector<double>> predicted(c.rows.size());
  std::vector<sim::BandInputs> bands(c.rows.size());
  for (size_t r = 0; r < c.rows.size(); ++r) {
    const CaseRow& row = c.rows[r];
    if (row.skip.empty()) {
      auto p = Predict(c, row, &bands[r]);
      if (!p.ok()) return InScenario(p.status(), c.path, row.pointer, false);
      predicted[r] = std::move(*p);
    }
    for (size_t i = 0; i < row.measured.size(); ++i) {
      PublicValidationRow out;
      out.case_name = c.name;
      out.case_class = c.cls;
      out.label = row.label;
      out.metric = row.measured[i].first;
      out.measured = row.measured[i].second;
      out.measured_kind = c.measured_kind;
      out.source_url = c.source.url;
      out.source_date = c.source.date;
      if (!row.skip.empty()) {
        out.skipped = row.skip;
        ++cls->skipped;
      } else {
        out.predicted = predicted[r][i];
        out.band = bands[r];
        out.error_pct = (out.predicted / out.measured - 1) * 100;
        cls->mape_pct += std::fabs(out.error_pct);
        ++cls->rows;
      }
      v->rows.push_back(std::move(out));
    }
  }
  for (const CaseComparison& k : c.comparisons) {
    PublicComparison out = Compare(c, k, predicted);
    if (out.skipped.empty()) {
      cls->mean_abs_ratio_difference += std::fabs(out.difference);
      ++cls->comparisons;
    } else {
      ++cls->comparisons_skipped;
    }
    v->comparisons.push_back(std::move(out));
  }
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& ValidationCaseMetrics() {
  static const std::vector<std::string> kMetrics = [] {
    std::vector<std::string> m = {"output_throughput",         "total_token_throughput",
                                  "input_throughput",          "request_throughput",
                                  "output_throughput_per_gpu", "total_token_throughput_per_gpu"};
    for (const std::string& stat : schema::StatNames()) {
      for (const char* what : {"ttft", "tpot", "itl", "e2el"}) {
        m.push_back(stat + "_" + what + "_ms");
      }
    }
    m.push_back("kv_capacity_tokens");
    // Energy rows (class "energy"): GPU board energy per output token, what
    // nvidia-smi, Zeus and ML.ENERGY measure (sim/energy.h).
    m.push_back("gpu_joules_per_output_token");
    return m;
  }();
  return kMetrics;
}

Result<PublicValidation> RunValidationCases(const std::vector<std::string>& case_files,
                                            const PublicValidationOptions& options) {
  PublicValidation v;
  v.case_files = case_files;
  // Read and check every case before running any: a bad file fails fast.
  std::vector<Case> cases;
  for (const std::string& f : v.case_files) {
    CAPPLAN_ASSIGN_OR_RETURN(Case c, ReadCase(f, options));
    for (CaseRow& row : c.rows) {
      if (!options.keep_row || !row.skip.empty() || options.keep_row(c.name, row.label)) continue;
      row.skip = "not selected";
      row.scenario = nullptr;
    }
    cases.push_back(std::move(c));
  }
  for (const Case& c : cases) {
    if (!options.only_class.empty() && c.cls != options.only_class) continue;
    CAPPLAN_RETURN_IF_ERROR(RunCase(c, &v, &v.classes[c.cls]));
  }
  for (auto& [k, s] : v.classes) {
    if (s.rows > 0) s.mape_pct /= s.rows;
    if (s.comparisons > 0) s.mean_abs_ratio_difference /= s.comparisons;
  }
  return v;
}

Result<PublicValidation> RunPublicValidation(const std::string& cases_dir,
                                             const PublicValidationOptions& options) {
  PublicValidation v;
  v.cases_dir = cases_dir;
  std::error_code ec;
  if (!std::filesystem::is_directory(cases_dir, ec)) {
    return Status::NotFound(cases_dir + ": no such folder of validation cases");
  }
  for (const auto& e : std::filesystem::directory_iterator(cases_dir, ec)) {
    if (e.path().extension() == ".json") v.case_files.push_back(e.path().string());
  }
  std::sort(v.case_files.begin(), v.case_files.end());
  if (v.case_files.empty()) return Status::NotFound(cases_dir + ": no *.json validation cases");
  CAPPLAN_ASSIGN_OR_RETURN(PublicValidation run, RunValidationCases(v.case_files, options));
  run.cases_dir = cases_dir;
  return run;
}

}  // namespace capplan::calibrate
