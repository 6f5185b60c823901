// Measurement records and the `capplan.measurements.v1` writer/validator
// (format defined in calibrate/MEASUREMENTS.md; keys here follow it exactly
// because calibrate's strict reader rejects unknown keys).
#ifndef CAPPLAN_KERNELS_HARNESS_MEASUREMENT_H_
#define CAPPLAN_KERNELS_HARNESS_MEASUREMENT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "kernels/harness/check.h"
#include "kernels/harness/timing.h"

namespace capplan::kernels {

struct MeasurementRecord {
  std::string kernel;        // kernel family, e.g. "paged_decode_attention"
  std::string op_class;      // attention|dense_gemm|moe|communication|elementwise|overhead
  std::string variant;       // optional
  std::string dtype;         // compute dtype
  std::string weight_dtype;  // optional (GEMMs)
  std::string kv_dtype;      // optional (attention)
  std::vector<std::pair<std::string, int64_t>> shape;  // ordered as given
  TimingStats timing;
  double bytes = 0;  // HBM bytes the kernel must move (napkin math)
  double flops = 0;  // FLOPs it must do
  std::optional<double> max_abs_err;
  std::string check;  // pass|fail|skipped|error, or "" to omit
  std::string error;  // check "error": why the case could not be measured
  int64_t ShapeValue(const std::string& key, int64_t fallback = 0) const;
};

// Suites append here; the driver writes the file after every case.
class MeasurementSink {
 public:
  void Add(MeasurementRecord r) { records_.push_back(std::move(r)); }
  const std::vector<MeasurementRecord>& records() const { return records_; }

 private:
  std::vector<MeasurementRecord> records_;
};

struct RunInfo {
  std::string gpu = "cpu";
  std::string driver;
  std::string cuda;
  std::string commit;
  std::string date;  // UTC ISO 8601
  bool dry_run = true;
  std::optional<int> sm_clock_mhz;
};

// Current UTC time as "2026-11-29T23:10:00Z".
std::string UtcNowIso8601();

nlohmann::json RecordToJson(const MeasurementRecord& r);
nlohmann::json MeasurementsToJson(const RunInfo& info, const std::vector<MeasurementRecord>& recs);
// Writes atomically (common/atomic_file.h).
Status WriteMeasurements(const std::string& path, const RunInfo& info,
                         const std::vector<MeasurementRecord>& recs);
// Checks a parsed file against MEASUREMENTS.md: required keys and types,
// known op_class and check values, no unknown keys. Errors name `origin` and
// the JSON path.
Status ValidateMeasurementsJson(const nlohmann::json& doc, const std::string& origin);

// A record's verdict from its CPU check: "pass" or "fail" with the largest
// absolute error, or "skipped" when no check ran.
inline void SetCheck(MeasurementRecord* r, const std::optional<CheckResult>& c) {
  if (c) {
    r->max_abs_err = c->max_abs_err;
    r->check = c->pass ? "pass" : "fail";
  } else {
    r->check = "skipped";
  }
}

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_HARNESS_MEASUREMENT_H_
