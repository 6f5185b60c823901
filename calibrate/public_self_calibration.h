// The second table of `capplan validate --public`: what calibrating on a
// user's own runs (calibrate/run_fit.h) buys, tried on the public serving
// cases. Each case's rows are grouped by deployment (the row's scenario
// without its workload and running-request cap: the runs a user would make
// of one server at several loads); in every group of three rows or more the
// fit sees the lowest- and highest-concurrency rows (file order breaks
// ties) and predicts the others. A case with no such group but three rows
// or more is one group of all its rows of one engine and GPU.
//
// This is the one place self-calibration sees a case's serving rows: it
// predicts the case's other rows, never the shipped profile, which stays
// as calibrate --public fitted it.
#ifndef CAPPLAN_CALIBRATE_PUBLIC_SELF_CALIBRATION_H_
#define CAPPLAN_CALIBRATE_PUBLIC_SELF_CALIBRATION_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace capplan::calibrate {

struct SelfCalibrationGroup {
  std::string case_name;
  std::string group;                    // the first row's label, "+ N more"
  std::vector<std::string> fit_labels;  // the two rows the fit saw
  int held_metrics = 0;                 // metrics of the rows it predicted
  // Mean |predicted / measured - 1| in percent over the held-out rows'
  // metrics: with the priors, with the fitted overlay.
  double before_pct = 0, after_pct = 0;
  std::vector<std::string> moved;  // "host_s 0 -> 0.0021"
  bool refused = false;            // calibrate --runs would not write it
  std::string blame;
};

struct SelfCalibrationCase {
  std::string case_name;
  int held_metrics = 0;
  double before_pct = 0, after_pct = 0;
  // As calibrate --runs would leave it: a refused group keeps its priors.
  double written_after_pct = 0;
  std::string note;  // why a case has no group
};

struct SelfCalibration {
  std::vector<SelfCalibrationGroup> groups;
  std::vector<SelfCalibrationCase> cases;
};

// Over the serving cases among `case_files`.
Result<SelfCalibration> RunSelfCalibration(const std::vector<std::string>& case_files);
// Every case's held-out metrics together (weighted by their count).
SelfCalibrationCase Overall(const SelfCalibration& s);
std::string FormatSelfCalibration(const SelfCalibration& s);
nlohmann::json SelfCalibrationToJson(const SelfCalibration& s);

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_PUBLIC_SELF_CALIBRATION_H_
