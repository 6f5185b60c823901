// A `capplan sweep --out` folder as `capplan report` reads it: the points in
// manifest order (manifest.jsonl), each from its point file, which wraps the
// simulator's summary with the point's grid and status (sim/sweep/README.md).
#ifndef CAPPLAN_REPORT_SWEEP_POINTS_H_
#define CAPPLAN_REPORT_SWEEP_POINTS_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "report/summary.h"

namespace capplan::report {

// True when `dir` holds a sweep manifest.
bool IsSweepFolder(const std::string& dir);

// True when `doc` is a sweep point file ({"point_id", "status", ...}) rather
// than a bare summary.
bool IsPointFile(const nlohmann::json& doc);
// The summary a point file (`doc`, read from `path`) wraps; nullopt for an
// "invalid" point (a configuration that cannot run has none). Errors name
// the file and JSON path.
Result<std::optional<Summary>> ReadPointSummary(const nlohmann::json& doc, const std::string& path);

// Every point whose status is "ok", in manifest order; "invalid" points
// (configurations that cannot run) are left out. Errors name the file and
// JSON path: a point listed but not computed yet (finish the sweep, which
// resumes), a point file with missing or mistyped fields, or a sweep with no
// valid point at all.
Result<std::vector<Summary>> LoadSweepFolder(const std::string& dir);

}  // namespace capplan::report

#endif  // CAPPLAN_REPORT_SWEEP_POINTS_H_
