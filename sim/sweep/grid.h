// Sweep grids: `--grid dotted.path=v1,v2,...` flags, their cross product, and
// validation of every point's scenario before anything runs.
#ifndef CAPPLAN_SIM_SWEEP_GRID_H_
#define CAPPLAN_SIM_SWEEP_GRID_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "sim/sweep/hooks.h"
#include "sim/sweep/point_id.h"

namespace capplan::sim::sweep {

struct GridAxis {
  std::string path;                    // "deployment.tp"
  std::vector<std::string> raw;        // as typed, for SetDotted
  std::vector<nlohmann::json> values;  // parsed like --set: JSON if it parses, else string
};

// Parses "path=v1,v2". Commas inside [...], {...} or "..." do not split, so
// array values work: `--grid x=[1,2],[3,4]`. Usage errors name the flag.
Result<GridAxis> ParseGridFlag(const std::string& flag);

struct SweepPoint {
  int64_t index = 0;    // position in the cross product (first axis outermost)
  std::string id;       // PointId(grid)
  GridAssignment grid;  // path -> value, in axis order
  nlohmann::json doc;   // base scenario with the overrides applied
  std::string invalid;  // non-empty: the scenario is an impossible configuration
};

struct SweepPlan {
  std::string origin;              // scenario file, for messages
  nlohmann::json base;             // scenario after --set
  std::string base_id;             // DocumentId(base)
  std::vector<std::string> paths;  // grid paths in flag order
  std::vector<SweepPoint> points;
};

// What BuildSweepPlan parses: every axis value alone and then every full
// point (kAll), or the axis values only (kAxisValuesOnly: a sweep, whose run
// parses each point anyway, so parsing it here too would double the work).
enum class PointChecks { kAll, kAxisValuesOnly };

// Expands the cross product and validates it: every axis value is first
// applied alone to the base scenario (so a bad path or a value of the wrong
// type is reported against its own --grid flag), then (kAll) every full
// point. Points the validator calls Invalid are kept and marked, not run;
// Usage errors fail the whole plan. Duplicate paths or values are Usage
// errors.
Result<SweepPlan> BuildSweepPlan(const nlohmann::json& base, const std::string& origin,
                                 const std::vector<GridAxis>& axes, const PointValidator& validate,
                                 PointChecks checks = PointChecks::kAll);

// Applies a point's overrides to a copy of `base` like --set, except that an
// object value merges into an existing object instead of replacing it.
Result<nlohmann::json> ApplyGrid(const nlohmann::json& base, const GridAssignment& grid,
                                 const std::string& origin);

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_GRID_H_
