// Writes a calibration fit into a profile document: the base profile's JSON
// with fitted curves and overheads replaced, each carrying provenance
// (kind "fitted", the measurement files with GPU/driver/commit/date) and its
// leave-one-out error; everything not fitted keeps its base provenance.
#ifndef CAPPLAN_CALIBRATE_REFIT_H_
#define CAPPLAN_CALIBRATE_REFIT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/fit.h"
#include "calibrate/measurements.h"
#include "common/status.h"

namespace capplan::calibrate {

// One row of the AIC version drift summary
// (calibrate/measurements/aic-version-drift.json, scripts/data/README.md):
// for one public AIC file and GPU, t(version) / t(pinned version) over the
// shapes both releases hold.
struct VersionDriftRow {
  std::string gpu, file, engine, pinned_version, version;
  // "same kernel source" (the same kernel timed at both releases),
  // "generic X" (another kernel source stood in) or "kernel source absent".
  std::string rows_at_version;
  int shapes = 0;
  double median_ratio = 1, p10_ratio = 1, p90_ratio = 1;  // shapes > 0 only
};

struct VersionDriftData {
  std::string path;  // as the repository names it
  std::string url;   // where AIC's tables were read
  std::vector<VersionDriftRow> rows;
};

// Reads the summary strictly: errors name the file and /rows/N/FIELD.
Result<VersionDriftData> ParseVersionDrift(const std::string& text, const std::string& origin);

// The drift a kernel table carries to another release of its engine:
//   per version pair of one of the table's AIC files and GPUs, with the
//   same kernel source at both releases, d = |median ratio - 1| (how far
//   the release moved the kernel's typical shape: a step runs many shapes,
//   so the shapes' own p10/p90 tails overstate a step's drift); the table's
//   drift is the p90 of d over its pairs. A table none of whose files has
//   such a pair takes the p90 of d over every same-kernel-source pair of
//   the summary (generic stand-ins time another kernel, not this one's
//   drift).
// `files`: (GPU model, AIC file key) of the table's sources
// ("H200", "vllm-torch-bf16-gemm").
hw::VersionDrift TableVersionDrift(const VersionDriftData& data,
                                   const std::vector<std::pair<std::string, std::string>>& files);

struct RefitOptions {
  std::string name;  // profile name to write ("" keeps the base's)
  // With it, every fitted kernel table whose records name their engine
  // release gets a version_drift (TableVersionDrift).
  const VersionDriftData* drift = nullptr;
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
