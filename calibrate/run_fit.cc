#include "calibrate/run_fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "calibrate/public_validation.h"
#include "calibrate/run_fit_internal.h"
#include "common/json_util.h"
#include "models/engine_step_costs.h"
#include "sim/scenario.h"
#include "sim/simulate.h"

namespace capplan::calibrate {
namespace {

// A one-sigma change that moves no metric by this much (in ln) is not
// exercised by the runs.
constexpr double kMinEffect = 0.01;
// A term whose effect keeps less than this share of its norm outside the
// span of the terms already in moves the metrics like them: not separable.
constexpr double kMinSeparable = 0.3;
constexpr double kFiniteStep = 0.5;  // in sigmas
constexpr int kMaxIterations = 8;
constexpr double kMaxHostS = 0.05, kMaxPerRequestS = 1e-3, kMaxScale = 4;

const std::string kHostS = "host_s";
const std::string kPerRequestS = "cpu_schedule_per_request_s";

size_t StepCostIndex(const std::string& key) {
  const auto& keys = models::EngineStepCostKeys();
  return std::find(keys.begin(), keys.end(), key) - keys.begin();
}

double ValueOf(const RunFitTerm& t, double theta) {
  if (t.term.kind == sim::OverlayTermKind::kStepCost) {
    const double hi = t.term.name == kHostS ? kMaxHostS : kMaxPerRequestS;
    return std::clamp(t.term.prior + t.sigma * theta, 0.0, std::max(hi, t.term.prior));
  }
  return std::clamp(t.term.prior * std::exp(t.sigma * theta), 1 / kMaxScale, kMaxScale);
}

// The theta range that keeps ValueOf inside its bounds.
std::pair<double, double> ThetaBounds(const RunFitTerm& t) {
  if (t.term.kind == sim::OverlayTermKind::kStepCost) {
    const double hi = t.term.name == kHostS ? kMaxHostS : kMaxPerRequestS;
    return {-t.term.prior / t.sigma, (std::max(hi, t.term.prior) - t.term.prior) / t.sigma};
  }
  const double b = std::log(kMaxScale) / t.sigma;
  return {-b, b};
}

}  // namespace

Result<std::vector<RowInfo>> ReadRowInfo(const std::vector<std::string>& case_files) {
  std::vector<RowInfo> out;
  for (const std::string& f : case_files) {
    CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(f));
    const std::string name = doc.value("name", "");
    std::string date, url;
    if (doc.contains("source") && doc["source"].is_object()) {
      date = doc["source"].value("date", "");
      url = doc["source"].value("url", "");
    }
    const nlohmann::json& rows = doc.at("rows");
    for (size_t i = 0; i < rows.size(); ++i) {
      RowInfo r;
      r.case_file = f, r.case_name = name, r.date = date, r.source = url;
      r.case_class = doc.value("class", "");
      r.label = rows[i].value("label", "");
      r.skipped = rows[i].contains("skipped");
      nlohmann::json sc = doc.at("scenario");
      if (rows[i].contains("set")) {
        for (const auto& [key, v] : rows[i]["set"].items()) {
          CAPPLAN_RETURN_IF_ERROR(SetDotted(&sc, key, v.dump(), f + ": /rows/" + std::to_string(i)));
        }
      }
      r.doc = sc;
      auto parsed = sim::ParseScenario(sc, f);
      if (!parsed.ok()) return parsed.status();
      const sim::Scenario& s = **parsed;
      r.hardware = s.hardware, r.model = s.model;
      const sim::DeploymentSpec& d = s.pools.front().deployment;
      r.engine = d.engine;
      r.engine_version = d.engine_resolution.version;
      r.step_costs = d.step_costs;
      for (const auto& [sel, impl] : d.engine_resolution.profile->kernel_names) r.impls.insert(impl);
      for (const auto& [arch, names] : d.engine_resolution.profile->kernel_names_by_architecture) {
        for (const auto& [sel, impl] : names) r.impls.insert(impl);
      }
      for (const auto& [sel, impl] : d.kernel_overrides) r.impls.insert(impl);
      r.concurrency = static_cast<double>(s.workload.concurrency);
      out.push_back(std::move(r));
    }
  }
  return out;
}

// ---- Fitter ----

Fitter::Fitter(std::vector<std::string> files, std::vector<RowInfo> rows, RunFitOptions options)
    : files_(std::move(files)), rows_(std::move(rows)), options_(std::move(options)) {}

Result<std::unique_ptr<Fitter>> Fitter::Make(const std::vector<std::string>& case_files,
                                             const RunFitOptions& options) {
  CAPPLAN_ASSIGN_OR_RETURN(std::vector<RowInfo> rows, ReadRowInfo(case_files));
  auto f = std::unique_ptr<Fitter>(new Fitter(case_files, std::move(rows), options));
  CAPPLAN_RETURN_IF_ERROR(f->Init());
  return f;
}

Status Fitter::Init() {
  const RowInfo* first = nullptr;
  for (const RowInfo& r : rows_) {
    if (r.skipped || !Fits(r)) continue;
    if (first == nullptr) first = &r;
    if (r.engine != first->engine || r.hardware != first->hardware) {
      return Status::Usage(r.case_file + ": row '" + r.label + "' runs " + r.engine + " on " +
                           r.hardware + " but '" + first->label + "' runs " + first->engine +
                           " on " + first->hardware +
                           ": calibrate one engine on one GPU at a time (one overlay each)");
    }
  }
  if (first == nullptr) {
    return Status::Usage("calibrate --runs: no row to fit (every row skipped or left out)");
  }
  engine_ = first->engine, hardware_ = first->hardware;
  engine_version_ = first->engine_version, model_ = first->model;
  auto add = [&](const std::string& name, sim::OverlayTermKind kind, double prior, double sigma) {
    RunFitTerm t;
    t.term.name = name, t.term.kind = kind, t.term.prior = t.term.value = prior;
    t.sigma = sigma;
    if (kind == sim::OverlayTermKind::kStepCost) t.term.step_cost_index = StepCostIndex(name);
    if (kind == sim::OverlayTermKind::kKernelScale) {
      t.term.implementation = name.substr(std::string(sim::kKernelScalePrefix).size());
    }
    terms_.push_back(std::move(t));
  };
  add(kHostS, sim::OverlayTermKind::kStepCost, first->step_costs.host_s, 3e-3);
  add(kPerRequestS, sim::OverlayTermKind::kStepCost,
      first->step_costs.cpu_schedule_per_request_s, 3e-5);
  std::set<std::string> impls;
  for (const RowInfo& r : rows_) {
    if (!r.skipped && Fits(r)) impls.insert(r.impls.begin(), r.impls.end());
  }
  for (const std::string& impl : impls) {
    add(sim::kKernelScalePrefix + impl, sim::OverlayTermKind::kKernelScale, 1, std::log(1.3));
  }
  kv_term_ = terms_.size();
  add(sim::kKvCapacityScaleTerm, sim::OverlayTermKind::kKvCapacityScale, 1, 0);
  return Status::Ok();
}

bool Fitter::Fits(const RowInfo& r) const {
  return !options_.fit_row || options_.fit_row(r.case_name, r.label);
}

sim::CalibrationOverlay Fitter::OverlayAt(const std::vector<double>& theta, double kv_scale) const {
  sim::CalibrationOverlay o;
  o.engine = engine_, o.hardware = hardware_, o.engine_version = engine_version_, o.model = model_;
  for (size_t j = 0; j < terms_.size(); ++j) {
    sim::OverlayTerm t = terms_[j].term;
    t.value = j == kv_term_ ? kv_scale : ValueOf(terms_[j], theta[j]);
    t.moved = t.value != t.prior;
    o.terms.push_back(std::move(t));
  }
  return o;
}

Result<Evaluation> Fitter::Evaluate(const std::vector<double>& theta, double kv_scale,
                                    const std::set<RowKey>* only) const {
  const nlohmann::json overlay = sim::CalibrationOverlayToJson(OverlayAt(theta, kv_scale));
  PublicValidationOptions opt;
  size_t k = 0;
  opt.adjust_scenario = [&](nlohmann::json* doc) {
    const RowInfo& r = rows_[std::min(k++, rows_.size() - 1)];
    if (r.engine == engine_ && doc->is_object()) (*doc)["calibration"] = overlay;
    return Status::Ok();
  };
  if (only != nullptr) {
    opt.keep_row = [only](const std::string& c, const std::string& l) {
      return only->count({c, l}) > 0;
    };
  }
  CAPPLAN_ASSIGN_OR_RETURN(PublicValidation v, RunValidationCases(files_, opt));
  Evaluation e;
  for (const PublicValidationRow& row : v.rows) {
    if (!row.skipped.empty()) continue;
    e[{row.case_name, row.label, row.metric}] = {row.measured, row.predicted};
  }
  ++evaluations_;
  return e;
}

std::vector<double> Fitter::Residuals(const Evaluation& e, const std::set<RowKey>& fit) const {
  std::vector<double> r;
  for (const auto& [key, mp] : e) {
    if (!fit.count({key.case_name, key.label}) || key.metric == "kv_capacity_tokens") continue;
    r.push_back(std::log(mp.second / mp.first));
  }
  return r;
}

Result<FitState> Fitter::Fit(const std::set<RowKey>& fit, const std::set<std::string>& hold) const {
  FitState s;
  s.theta.assign(terms_.size(), 0.0);
  // The KV pool: the engine's own figure over the plan's, read directly.
  CAPPLAN_ASSIGN_OR_RETURN(Evaluation base, Evaluate(s.theta, 1, &fit));
  double kv_log = 0;
  int kv_rows = 0;
  for (const auto& [key, mp] : base) {
    if (fit.count({key.case_name, key.label}) && key.metric == "kv_capacity_tokens") {
      kv_log += std::log(mp.first / mp.second), ++kv_rows;
    }
  }
  s.kv_scale = kv_rows > 0 && !hold.count(sim::kKvCapacityScaleTerm) ? std::exp(kv_log / kv_rows)
                                                                     : 1.0;
  s.why.assign(terms_.size(), "");
  s.why[kv_term_] = kv_rows > 0 ? "the engine's start-up KV line (" + std::to_string(kv_rows) +
                                      " run(s)) over capplan's plan of the same deployment"
                                : "no run has a start-up KV line (import-run --log)";
  if (hold.count(sim::kKvCapacityScaleTerm)) s.why[kv_term_] = "held at its prior (--hold)";
  CAPPLAN_ASSIGN_OR_RETURN(Evaluation e0, Evaluate(s.theta, s.kv_scale, &fit));
  std::vector<double> r0 = Residuals(e0, fit);
  std::set<RowKey> runs;
  for (const auto& [key, mp] : e0) {
    if (fit.count({key.case_name, key.label}) && key.metric != "kv_capacity_tokens") {
      runs.insert({key.case_name, key.label});
    }
  }
  CAPPLAN_RETURN_IF_ERROR(SelectTerms(fit, hold, r0, runs.size(), &s));
  CAPPLAN_RETURN_IF_ERROR(GaussNewton(fit, r0, &s));
  return s;
}

Result<std::vector<std::vector<double>>> Fitter::Jacobian(const std::set<RowKey>& fit,
                                                          const std::vector<double>& theta,
                                                          double kv_scale,
                                                          const std::vector<double>& r0,
                                                          const std::vector<size_t>& cols) const {
  std::vector<std::vector<double>> jac;
  for (size_t j : cols) {
    std::vector<double> t = theta;
    const auto [lo, hi] = ThetaBounds(terms_[j]);
    double h = t[j] + kFiniteStep <= hi ? kFiniteStep : -kFiniteStep;
    if (t[j] + h < lo) h = hi - t[j];
    t[j] += h;
    CAPPLAN_ASSIGN_OR_RETURN(Evaluation e, Evaluate(t, kv_scale, &fit));
    std::vector<double> r = Residuals(e, fit);
    if (r.size() != r0.size()) return Status::Internal("calibrate --runs: a row stopped running");
    std::vector<double> col(r.size());
    for (size_t i = 0; i < r.size(); ++i) col[i] = (r[i] - r0[i]) / h;
    jac.push_back(std::move(col));
  }
  return jac;
}

Status Fitter::SelectTerms(const std::set<RowKey>& fit, const std::set<std::string>& hold,
                           const std::vector<double>& r0, size_t runs, FitState* s) const {
  std::vector<size_t> cols;
  for (size_t j = 0; j < terms_.size(); ++j) {
    if (j == kv_term_) continue;
    if (hold.count(terms_[j].term.name)) {
      s->why[j] = "held at its prior (--hold)";
      continue;
    }
    cols.push_back(j);
  }
  CAPPLAN_ASSIGN_OR_RETURN(auto jac, Jacobian(fit, s->theta, s->kv_scale, r0, cols));
  std::vector<size_t> order(cols.size());
  std::vector<double> norm(cols.size());
  for (size_t c = 0; c < cols.size(); ++c) {
    order[c] = c;
    for (double v : jac[c]) norm[c] += v * v;
    norm[c] = std::sqrt(norm[c]);
  }
  // The term that alone explains most of the miss first: the drop in the
  // objective a one-term linear fit gives, (J'r)^2 / (|J|^2 + sigma_r^2);
  // ties by name keep the choice deterministic.
  std::vector<double> gain(cols.size());
  for (size_t c = 0; c < cols.size(); ++c) {
    double jr = 0;
    for (size_t i = 0; i < r0.size(); ++i) jr += jac[c][i] * r0[i];
    gain[c] = jr * jr / (norm[c] * norm[c] + kResidualSigma * kResidualSigma);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return gain[a] > gain[b]; });
  // The metrics of one run move together (one load, one batch mix): a run
  // tells one term, and one run is kept back for the spread.
  const size_t max_terms = std::max<size_t>(1, runs > 1 ? runs - 1 : 1);
  const Eigen::Index n = static_cast<Eigen::Index>(r0.size());
  Eigen::MatrixXd basis(n, 0);
  std::vector<size_t> chosen_cols;
  for (size_t c : order) {
    const size_t j = cols[c];
    const double max_effect = norm[c] == 0 ? 0 : [&] {
      double m = 0;
      for (double v : jac[c]) m = std::max(m, std::fabs(v));
      return m;
    }();
    if (max_effect < kMinEffect) {
      s->why[j] = "not exercised: a one-sigma change moves no metric of the runs by 1%";
      continue;
    }
    Eigen::VectorXd v = Eigen::Map<const Eigen::VectorXd>(jac[c].data(), n);
    double rest = 1;
    std::string like;
    if (basis.cols() > 0) {
      Eigen::VectorXd coef = basis.colPivHouseholderQr().solve(v);
      rest = (v - basis * coef).norm() / v.norm();
      double best = -1;
      for (Eigen::Index k = 0; k < basis.cols(); ++k) {
        const double cos = std::fabs(basis.col(k).dot(v)) / (basis.col(k).norm() * v.norm());
        if (cos > best) best = cos, like = terms_[chosen_cols[k]].term.name;
      }
    }
    if (rest < kMinSeparable) {
      s->why[j] = "cannot be told apart from " + like + ": the runs move both alike";
      continue;
    }
    if (chosen_cols.size() >= max_terms) {
      s->why[j] = "more terms than " + std::to_string(runs) +
                  " run(s) can fit; add runs at other loads to identify it";
      continue;
    }
    basis.conservativeResize(n, basis.cols() + 1);
    basis.col(basis.cols() - 1) = v;
    chosen_cols.push_back(j);
  }
  s->selected = chosen_cols;
  std::sort(s->selected.begin(), s->selected.end());
  return Status::Ok();
}

double Fitter::Objective(const std::vector<double>& r, const std::vector<double>& theta,
                         const std::vector<size_t>& sel) const {
  double o = 0;
  for (double v : r) o += (v / kResidualSigma) * (v / kResidualSigma);
  for (size_t j : sel) o += theta[j] * theta[j];
  return o;
}

Status Fitter::GaussNewton(const std::set<RowKey>& fit, std::vector<double> r,
                           FitState* s) const {
  const std::vector<size_t>& sel = s->selected;
  if (sel.empty() || r.empty()) return Status::Ok();
  double obj = Objective(r, s->theta, sel);
  const Eigen::Index n = static_cast<Eigen::Index>(r.size());
  const Eigen::Index m = static_cast<Eigen::Index>(sel.size());
  for (int it = 0; it < kMaxIterations; ++it) {
    CAPPLAN_ASSIGN_OR_RETURN(auto jac, Jacobian(fit, s->theta, s->kv_scale, r, sel));
    Eigen::MatrixXd J(n, m);
    for (Eigen::Index c = 0; c < m; ++c) {
      J.col(c) = Eigen::Map<const Eigen::VectorXd>(jac[c].data(), n) / kResidualSigma;
    }
    Eigen::VectorXd rv = Eigen::Map<const Eigen::VectorXd>(r.data(), n) / kResidualSigma;
    Eigen::VectorXd th(m);
    for (Eigen::Index c = 0; c < m; ++c) th[c] = s->theta[sel[c]];
    const Eigen::MatrixXd A = J.transpose() * J + Eigen::MatrixXd::Identity(m, m);
    const Eigen::VectorXd step = -A.ldlt().solve(J.transpose() * rv + th);
    bool improved = false;
    for (double frac : {1.0, 0.5, 0.25}) {
      std::vector<double> t = s->theta;
      for (Eigen::Index c = 0; c < m; ++c) {
        const auto [lo, hi] = ThetaBounds(terms_[sel[c]]);
        t[sel[c]] = std::clamp(t[sel[c]] + frac * step[c], lo, hi);
      }
      CAPPLAN_ASSIGN_OR_RETURN(Evaluation e, Evaluate(t, s->kv_scale, &fit));
      std::vector<double> rt = Residuals(e, fit);
      const double o = Objective(rt, t, sel);
      if (o < obj - 1e-9) {
        s->theta = t, r = rt, obj = o, improved = true;
        break;
      }
    }
    if (!improved || step.norm() < 0.01) break;
  }
  return Status::Ok();
}

}  // namespace capplan::calibrate
