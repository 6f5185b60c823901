// The on-disk layout of a sweep output directory, shared by single-process
// runs, shards on other machines and `--merge`:
//   DIR/manifest.jsonl  one point per line: {"index", "point_id", "grid":
//                       [[path, value], ...], "base_scenario_id"}
//   DIR/<point_id>.json {"point_id", "index", "grid", "base_scenario_id",
//                        "status": "ok"|"invalid", "error"?, "summary"?}
//   DIR/sweep.csv       point_id, each grid path, status, key metrics
#ifndef CAPPLAN_SIM_SWEEP_SWEEP_FILES_H_
#define CAPPLAN_SIM_SWEEP_SWEEP_FILES_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "sim/sweep/grid.h"

namespace capplan::sim::sweep {

std::string ManifestPath(const std::string& dir);
std::string PointPath(const std::string& dir, const std::string& point_id);
std::string SweepCsvPath(const std::string& dir);

std::string ManifestText(const SweepPlan& plan);

struct ManifestEntry {
  int64_t index = 0;
  std::string point_id;
  GridAssignment grid;
  std::string base_scenario_id;
};
// Errors name the file and line.
Result<std::vector<ManifestEntry>> ReadManifest(const std::string& path);

nlohmann::json PointRecord(const SweepPlan& plan, const SweepPoint& point,
                           const nlohmann::json* summary, const std::string& error);

// The finished record for a point, or nullopt when the file is absent or
// unreadable (a run killed before its atomic rename leaves nothing). A record
// from another base scenario is a Usage error: mixing them would corrupt the
// sweep, so the user must pick a fresh --out.
Result<std::optional<nlohmann::json>> ReadPointRecord(const std::string& dir,
                                                      const std::string& point_id,
                                                      const std::string& base_scenario_id);

// Summary keys written to sweep.csv after the grid columns, in this order.
const std::vector<std::string>& SweepCsvMetrics();
// Rows in manifest order. Values print as their JSON text (strings bare), so
// the file is byte-identical however the points were computed.
std::string SweepCsv(const std::vector<std::string>& paths,
                     const std::vector<nlohmann::json>& records);
std::string CsvField(const std::string& s);

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_SWEEP_FILES_H_
