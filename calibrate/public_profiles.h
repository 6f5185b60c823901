// `capplan calibrate --public`: the one command that regenerates the shipped
// hardware profiles (calibrate/profiles/NAME.json) from their hand-written
// bases (calibrate/profiles/base/NAME.json: datasheet figures, measured
// ceilings, anchors) and the public measurements
// (calibrate/measurements/public/): every profile's efficiency curves from
// the kernel records (other Hopper GPUs' records as fractions of their own
// GPU's ceilings, fit.h), its all-reduce bus bandwidth from the nccl-tests
// records, and the per-step fixed costs from the public step cases
// (step_fit.h), which also regenerate the engines' step costs
// (models/engine_step_costs.json). A test checks the shipped files equal its
// output.
#ifndef CAPPLAN_CALIBRATE_PUBLIC_PROFILES_H_
#define CAPPLAN_CALIBRATE_PUBLIC_PROFILES_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibrate/fit.h"
#include "calibrate/measurements.h"
#include "calibrate/step_fit.h"
#include "common/status.h"
#include "hw/profile.h"

namespace capplan::calibrate {

struct PublicProfiles {
  MeasurementSet set;
  std::map<std::string, hw::HardwareProfile> bases;  // name -> base profile
  std::map<std::string, CalibrationFit> fits;    // name -> kernel fit
  StepFit step;
  std::map<std::string, nlohmann::json> docs;  // name -> profile to write
  nlohmann::json step_costs;                   // models/engine_step_costs.json to write
};

// Fits every base under `base_dir` from the files under `measurements_dir`
// and the step cases under `cases_dir`, and the engine step costs from their
// base `step_costs_base` (a file) and the same cases; writes nothing.
Result<PublicProfiles> FitPublicProfiles(const std::string& base_dir,
                                         const std::string& measurements_dir,
                                         const std::string& cases_dir,
                                         const std::string& step_costs_base);

// The report: per profile the kernel fit (refit.h), then the step fit.
std::string PublicProfilesMarkdown(const PublicProfiles& p);

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_PUBLIC_PROFILES_H_
