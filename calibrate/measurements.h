// Strict reader of `capplan.measurements.v1` files (calibrate/MEASUREMENTS.md)
// for calibration. Stricter than the writer-side validator in kernels/harness:
// calibration must never fit a NaN, a zero time or a record from another GPU,
// so every such record is a one-line error naming the file, the record index
// and the field.
#ifndef CAPPLAN_CALIBRATE_MEASUREMENTS_H_
#define CAPPLAN_CALIBRATE_MEASUREMENTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace capplan {

// Where a record came from: everything a provenance line needs.
struct MeasurementSource {
  std::string path;
  std::string gpu, driver, cuda, commit, date;
  bool dry_run = false;
  // "FILE (gpu G, driver D, cuda C, commit X, date Y)"
  std::string Describe() const;
};

struct MeasuredKernel {
  std::string kernel, op_class, variant, dtype, weight_dtype, kv_dtype;
  std::map<std::string, int64_t> shape;
  double median_us = 0;
  double bytes = 0;
  double flops = 0;
  std::string check;  // "" when absent
  int source = 0;     // index into MeasurementSet::sources
  int index = 0;      // record index inside its file
  int64_t Shape(const std::string& key, int64_t fallback = 0) const;
};

struct MeasurementSet {
  std::vector<MeasurementSource> sources;
  std::vector<MeasuredKernel> records;
};

// Reads one file. Errors: "FILE: /records/3/median_us: must be > 0, got 0".
// Records whose check is "fail" are errors too: a wrong kernel's time is not
// a cost of the right one.
Status ReadMeasurementFile(const std::string& path, MeasurementSet* set);

struct ReadOptions {
  bool allow_dry_run = false;
};

// Reads every file; refuses dry runs unless allowed and files from different
// GPUs or drivers (one profile describes one GPU + driver).
Result<MeasurementSet> ReadMeasurements(const std::vector<std::string>& paths,
                                        const ReadOptions& options);

}  // namespace capplan

#endif  // CAPPLAN_CALIBRATE_MEASUREMENTS_H_
