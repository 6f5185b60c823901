// Writes a calibration fit into a profile document: the base profile's JSON
// with fitted curves and overheads replaced, each carrying provenance
// (kind "fitted", the measurement files with GPU/driver/commit/date) and its
// leave-one-out error; everything not fitted keeps its base provenance.
#ifndef CAPPLAN_CALIBRATE_REFIT_H_
#define CAPPLAN_CALIBRATE_REFIT_H_

#include <nlohmann/json.hpp>
#include <string>

#include "calibrate/fit.h"
#include "calibrate/measurements.h"
#include "common/status.h"

namespace capplan::calibrate {

struct RefitOptions {
  std::string name;  // profile name to write ("" keeps the base's)
};

// Returns the new profile document; it is re-parsed with
// ParseHardwareProfile before returning so a written file always loads.
Result<nlohmann::json> ApplyFit(const nlohmann::json& base_doc, const std::string& base_origin,
                                const CalibrationFit& fit, const MeasurementSet& set,
                                const RefitOptions& options);

// The fit report (--report FILE.md): per class, the curves before and after,
// the fitted range, points and LOO error; unused records with reasons.
std::string FitReportMarkdown(const hw::HardwareProfile& base, const CalibrationFit& fit,
                              const MeasurementSet& set);

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_REFIT_H_
