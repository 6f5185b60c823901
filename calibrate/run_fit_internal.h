// The fit behind calibrate/run_fit.h, shared by its driver (run_fit.cc,
// run_fit_held_out.cc) and the self-calibration table of `validate
// --public` (public_self_calibration.cc). Not a public interface.
#ifndef CAPPLAN_CALIBRATE_RUN_FIT_INTERNAL_H_
#define CAPPLAN_CALIBRATE_RUN_FIT_INTERNAL_H_

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "calibrate/run_fit.h"
#include "models/engine_step_costs.h"

namespace capplan::calibrate {

// What one case row runs (its scenario parsed once).
struct RowInfo {
  std::string case_file, case_name, label, date, source;
  std::string engine, engine_version, hardware, model;
  bool skipped = false;
  double concurrency = 0;  // the closed loop's; 0 for an open loop
  std::set<std::string> impls;  // kernel implementations the deployment names
  models::EngineStepCosts step_costs;
  nlohmann::json doc;  // the row's scenario document
  std::string case_class;
};

// Reads each case's rows far enough to know what every row runs: the row's
// scenario (the case's with its `set`), parsed.
Result<std::vector<RowInfo>> ReadRowInfo(const std::vector<std::string>& case_files);

// A run: one row of one case.
struct RowKey {
  std::string case_name, label;
  bool operator<(const RowKey& o) const {
    return std::tie(case_name, label) < std::tie(o.case_name, o.label);
  }
};
struct MetricKey {
  std::string case_name, label, metric;
  bool operator<(const MetricKey& o) const {
    return std::tie(case_name, label, metric) < std::tie(o.case_name, o.label, o.metric);
  }
};
// metric -> (measured, predicted), over the rows that ran.
using Evaluation = std::map<MetricKey, std::pair<double, double>>;

struct FitState {
  std::vector<double> theta;     // per term, in sigmas from its prior
  double kv_scale = 1;
  std::vector<size_t> selected;  // terms the fit moved
  std::vector<std::string> why;  // per term not selected: why it kept its prior
};

class Fitter {
 public:
  static Result<std::unique_ptr<Fitter>> Make(const std::vector<std::string>& case_files,
                                              const RunFitOptions& options);
  // Fits the terms not in `hold` to the runs in `fit`.
  Result<FitState> Fit(const std::set<RowKey>& fit, const std::set<std::string>& hold) const;
  // Every row (or those in `only`) predicted with the terms at `theta`.
  Result<Evaluation> Evaluate(const std::vector<double>& theta, double kv_scale,
                              const std::set<RowKey>* only = nullptr) const;
  sim::CalibrationOverlay OverlayAt(const std::vector<double>& theta, double kv_scale) const;

  const std::vector<RowInfo>& rows() const { return rows_; }
  const std::vector<RunFitTerm>& terms() const { return terms_; }
  bool Fits(const RowInfo& r) const;
  int evaluations() const { return evaluations_; }

 private:
  Fitter(std::vector<std::string> files, std::vector<RowInfo> rows, RunFitOptions options);
  Status Init();
  std::vector<double> Residuals(const Evaluation& e, const std::set<RowKey>& fit) const;
  Result<std::vector<std::vector<double>>> Jacobian(const std::set<RowKey>& fit,
                                                    const std::vector<double>& theta,
                                                    double kv_scale, const std::vector<double>& r0,
                                                    const std::vector<size_t>& cols) const;
  Status SelectTerms(const std::set<RowKey>& fit, const std::set<std::string>& hold,
                     const std::vector<double>& r0, size_t runs, FitState* s) const;
  Status GaussNewton(const std::set<RowKey>& fit, std::vector<double> r, FitState* s) const;
  double Objective(const std::vector<double>& r, const std::vector<double>& theta,
                   const std::vector<size_t>& sel) const;

  std::vector<std::string> files_;
  std::vector<RowInfo> rows_;
  RunFitOptions options_;
  std::vector<RunFitTerm> terms_;
  size_t kv_term_ = 0;
  std::string engine_, hardware_, engine_version_, model_;
  mutable int evaluations_ = 0;
};

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_RUN_FIT_INTERNAL_H_
