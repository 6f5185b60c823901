// A `capplan sweep --out` folder as `capplan report` reads it: the points in
// manifest order (manifest.jsonl), each from its point file, which wraps the
// simulator's summary with the point's grid and status (sim/sweep/README.md).
#ifndef CAPPLAN_REPORT_SWEEP_POINTS_H_
#define CAPPLAN_REPORT_SWEEP_POINTS_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "report/summary.h"

namespace capplan::report {

// True when `dir` holds a sweep manifest.
bool IsSweepFolder(const std::string& dir);

// Every point whose status is "ok", in manifest order; "invalid" points
// (configurations that cannot run) are left out. Errors name the file and
// JSON path: a point listed but not computed yet (finish the sweep, which
// resumes), a point file with missing or mistyped fields, or a sweep with no
// valid point at all.
Result<std::vector<Summary>> LoadSweepFolder(const std::string& dir);

}  // namespace capplan::report

#endif  // CAPPLAN_REPORT_SWEEP_POINTS_H_
