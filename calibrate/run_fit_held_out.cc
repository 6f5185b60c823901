// FitRuns: the fit on every run, the leave-one-out pass that judges it, the
// refusal and the overlay it writes (calibrate/run_fit.h).
#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <optional>
#include <set>

#include "calibrate/run_fit.h"
#include "calibrate/run_fit_internal.h"
#include "common/did_you_mean.h"
#include "sim/prediction_intervals.h"

namespace capplan::calibrate {
namespace {

// The interval group (sim/prediction_intervals.h) a metric's band belongs to.
// The band group's name (sim/prediction_intervals.h), or "" for a metric
// without a band (a capacity row).
std::string BandGroup(const std::string& metric) {
  const std::optional<sim::BandGroup> g = sim::BandGroupOf(metric);
  return g ? sim::kBandGroupNames[static_cast<int>(*g)] : "";
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t i = static_cast<size_t>(pos);
  const double f = pos - static_cast<double>(i);
  return i + 1 < v.size() ? v[i] * (1 - f) + v[i + 1] * f : v[i];
}

double AbsPct(double predicted, double measured) {
  return std::fabs(predicted / measured - 1) * 100;
}

struct HeldOut {
  std::map<MetricKey, double> predicted;
  double error_pct = 0;
};

// Each run predicted by a fit on the others; `always` (rows that only state
// the KV capacity, read directly rather than fitted) are in every fit.
Result<HeldOut> LeaveOneOut(const Fitter& f, const std::set<RowKey>& units,
                            const std::set<RowKey>& always, const std::set<std::string>& hold) {
  HeldOut h;
  double sum = 0;
  int n = 0;
  for (const RowKey& u : units) {
    std::set<RowKey> rest = units;
    rest.erase(u);
    rest.insert(always.begin(), always.end());
    CAPPLAN_ASSIGN_OR_RETURN(FitState s, f.Fit(rest, hold));
    const std::set<RowKey> only = {u};
    CAPPLAN_ASSIGN_OR_RETURN(Evaluation e, f.Evaluate(s.theta, s.kv_scale, &only));
    for (const auto& [key, mp] : e) {
      h.predicted[key] = mp.second;
      sum += AbsPct(mp.second, mp.first), ++n;
    }
  }
  h.error_pct = n > 0 ? sum / n : 0;
  return h;
}

Status CheckHold(const Fitter& f, const std::vector<std::string>& hold) {
  std::vector<std::string> names;
  for (const RunFitTerm& t : f.terms()) names.push_back(t.term.name);
  for (const std::string& h : hold) {
    if (std::find(names.begin(), names.end(), h) != names.end()) continue;
    return Status::Usage("--hold '" + EchoValue(h) + "': not a term of these runs" +
                         DidYouMean(h, names) + " (terms: host_s, " +
                         "cpu_schedule_per_request_s, kernel_scale.<implementation>, " +
                         "kv_capacity_scale)");
  }
  return Status::Ok();
}

// The band per interval group: the p10 and p90 of measured / predicted over
// the held-out predictions, widened to cover the in-sample residuals' own.
void SetBands(const Evaluation& after, const HeldOut* held, sim::CalibrationOverlay* o) {
  std::map<std::string, std::vector<double>> in, out;
  for (const auto& [key, mp] : after) {
    const std::string g = BandGroup(key.metric);
    if (g.empty()) continue;
    in[g].push_back(mp.first / mp.second);
    if (held != nullptr) {
      auto it = held->predicted.find(key);
      if (it != held->predicted.end()) out[g].push_back(mp.first / it->second);
    }
  }
  for (const auto& [g, ratios] : in) {
    sim::OverlayBand b;
    b.lo = std::min(1.0, Quantile(ratios, 0.1));
    b.hi = std::max(1.0, Quantile(ratios, 0.9));
    if (out.count(g) && !out[g].empty()) {
      b.lo = std::min(b.lo, Quantile(out[g], 0.1));
      b.hi = std::max(b.hi, Quantile(out[g], 0.9));
    }
    b.rows = static_cast<int>(ratios.size());
    o->bands[g] = b;
  }
}

std::string TodayUtc() {
  std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

void FillTerms(const Fitter& f, const FitState& s, int fit_metrics, int fit_runs,
               RunFitResult* r) {
  const sim::CalibrationOverlay at = f.OverlayAt(s.theta, s.kv_scale);
  for (size_t j = 0; j < f.terms().size(); ++j) {
    RunFitTerm t = f.terms()[j];
    t.term = at.terms[j];
    t.identified = std::find(s.selected.begin(), s.selected.end(), j) != s.selected.end();
    if (t.identified) {
      t.term.why = "fitted on " + std::to_string(fit_metrics) + " metric(s) of " +
                   std::to_string(fit_runs) + " run(s)";
    } else {
      t.term.why = s.why[j];
    }
    r->terms.push_back(t);
    r->overlay.terms.push_back(t.term);
  }
}

// The fitted rows the leave-one-out holds out one at a time (serving
// rows), those every held-out fit keeps (capacity rows), and the unit
// named: "concurrency" when one case's held-out rows each run another.
void SplitHeldOutUnits(const Fitter& f, const std::set<RowKey>& fit,
                       const std::set<std::string>& fit_cases, const Evaluation& before,
                       std::set<RowKey>* units, std::set<RowKey>* always, std::string* unit) {
  for (const RowKey& k : fit) {
    bool serving = false;
    for (const auto& [key, mp] : before) {
      serving |= key.case_name == k.case_name && key.label == k.label &&
                 key.metric != "kv_capacity_tokens";
    }
    (serving ? *units : *always).insert(k);
  }
  std::set<double> concurrencies;
  for (const RowInfo& row : f.rows()) {
    if (units->count({row.case_name, row.label})) concurrencies.insert(row.concurrency);
  }
  if (fit_cases.size() == 1 && units->size() > 1 && concurrencies.size() == units->size()) {
    *unit = "concurrency";
  }
}

// Refuses the overlay when it predicts the held-out rows worse than the
// priors, naming the moved term whose holding helps most.
Status JudgeHeldOut(const Fitter& f, const std::set<RowKey>& units, const std::set<RowKey>& always,
                    const std::set<std::string>& hold, const HeldOut& held, RunFitResult* r) {
  const sim::CalibrationOverlay& o = r->overlay;
  // No term moved: the held-out predictions are the priors' (to rounding).
  if (held.error_pct <= o.held_out_before_pct + 1e-9 ||
      std::none_of(r->terms.begin(), r->terms.end(),
                   [](const RunFitTerm& t) { return t.term.moved; })) {
    return Status::Ok();
  }
  r->refused = true;
  // The term whose holding helps the held-out error most.
  double best = held.error_pct;
  for (const RunFitTerm& t : r->terms) {
    if (!t.term.moved) continue;
    std::set<std::string> h = hold;
    h.insert(t.term.name);
    CAPPLAN_ASSIGN_OR_RETURN(HeldOut without, LeaveOneOut(f, units, always, h));
    if (r->blame.empty() || without.error_pct < best) {
      best = without.error_pct, r->blame = t.term.name;
    }
  }
  char msg[512];
  std::snprintf(msg, sizeof(msg),
                "refused: the fit predicts the held-out %s worse than the priors (%.1f%% -> "
                "%.1f%% mean error); the term to blame is %s (held at its prior: %.1f%%): "
                "rerun with --hold %s",
                o.held_out_unit == "run" ? "runs" : "concurrencies", o.held_out_before_pct,
                held.error_pct,
                r->blame.empty() ? "(none moved)" : r->blame.c_str(), best,
                r->blame.empty() ? "TERM" : r->blame.c_str());
  r->refusal = msg;
  return Status::Ok();
}

}  // namespace

Result<RunFitResult> FitRuns(const std::vector<std::string>& case_files,
                             const RunFitOptions& options) {
  CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<Fitter> f, Fitter::Make(case_files, options));
  CAPPLAN_RETURN_IF_ERROR(CheckHold(*f, options.hold));
  const std::set<std::string> hold(options.hold.begin(), options.hold.end());
  std::set<RowKey> fit, all;
  std::set<std::string> fit_cases;
  RunFitResult r;
  for (const RowInfo& row : f->rows()) {
    if (row.skipped) continue;
    if (options.scope_row && !options.scope_row(row.case_name, row.label)) continue;
    all.insert({row.case_name, row.label});
    if (!f->Fits(row)) continue;
    fit.insert({row.case_name, row.label});
    fit_cases.insert(row.case_name);
    r.overlay.runs.push_back({row.case_file, row.case_name, row.label, row.date, row.source});
  }
  CAPPLAN_ASSIGN_OR_RETURN(FitState s, f->Fit(fit, hold));
  const std::vector<double> prior(f->terms().size(), 0.0);
  CAPPLAN_ASSIGN_OR_RETURN(Evaluation before, f->Evaluate(prior, 1, &all));
  CAPPLAN_ASSIGN_OR_RETURN(Evaluation after, f->Evaluate(s.theta, s.kv_scale, &all));
  int fit_metrics = 0;
  for (const auto& [key, mp] : before) {
    const bool fitted = fit.count({key.case_name, key.label}) > 0;
    const double a = after.at(key).second;
    (fitted ? r.fit_before_pct : r.other_before_pct) += AbsPct(mp.second, mp.first);
    (fitted ? r.fit_after_pct : r.other_after_pct) += AbsPct(a, mp.first);
    ++(fitted ? r.fitted_rows : r.other_rows);
    fit_metrics += fitted;
    r.overlay.rows.push_back({key.case_name, key.label, key.metric, mp.first, mp.second, a, {}});
  }
  if (r.fitted_rows > 0) r.fit_before_pct /= r.fitted_rows, r.fit_after_pct /= r.fitted_rows;
  if (r.other_rows > 0) r.other_before_pct /= r.other_rows, r.other_after_pct /= r.other_rows;
  FillTerms(*f, s, fit_metrics, static_cast<int>(fit.size()), &r);

  sim::CalibrationOverlay& o = r.overlay;
  const sim::CalibrationOverlay at = f->OverlayAt(s.theta, s.kv_scale);
  o.engine = at.engine, o.engine_version = at.engine_version;
  o.hardware = at.hardware, o.model = at.model;
  o.generated_by = options.generated_by;
  o.created = TodayUtc();
  o.held_out_unit = "run";
  o.held_out_before_pct = r.fit_before_pct;
  HeldOut held;
  std::set<RowKey> units, always;
  SplitHeldOutUnits(*f, fit, fit_cases, before, &units, &always, &o.held_out_unit);
  if (!options.skip_held_out && units.size() >= 2) {
    CAPPLAN_ASSIGN_OR_RETURN(held, LeaveOneOut(*f, units, always, hold));
    r.held_out_done = true;
    o.held_out_after_pct = held.error_pct;
    double sum = 0;
    int n = 0;
    for (const auto& [key, mp] : before) {
      if (units.count({key.case_name, key.label})) sum += AbsPct(mp.second, mp.first), ++n;
    }
    o.held_out_before_pct = n > 0 ? sum / n : 0;
    for (sim::OverlayRunRow& row : o.rows) {
      auto it = held.predicted.find({row.case_name, row.label, row.metric});
      if (it != held.predicted.end()) row.held_out_after = it->second;
    }
  }
  SetBands(after, r.held_out_done ? &held : nullptr, &o);
  if (options.skip_held_out) return r;
  if (!r.held_out_done) {
    r.refused = true;
    r.refusal = "one run: nothing to hold out, so no check that the fit predicts a run it "
                "did not see; import two runs or more (other concurrencies or lengths)";
    return r;
  }
  CAPPLAN_RETURN_IF_ERROR(JudgeHeldOut(*f, units, always, hold, held, &r));
  return r;
}

}  // namespace capplan::calibrate
