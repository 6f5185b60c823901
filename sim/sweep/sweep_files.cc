#include "sim/sweep/sweep_files.h"

#include <filesystem>
#include <sstream>

#include "common/atomic_file.h"
#include "common/json_util.h"

namespace capplan {

std::string ManifestPath(const std::string& dir) { return dir + "/manifest.jsonl"; }
std::string PointPath(const std::string& dir, const std::string& id) {
  return dir + "/" + id + ".json";
}
std::string SweepCsvPath(const std::string& dir) { return dir + "/sweep.csv"; }

namespace {
nlohmann::json GridJson(const GridAssignment& grid) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& [path, value] : grid) a.push_back({path, value});
  return a;
}
}  // namespace

std::string ManifestText(const SweepPlan& plan) {
  std::string out;
  for (const SweepPoint& p : plan.points) {
    nlohmann::json line = {{"index", p.index},
                           {"point_id", p.id},
                           {"grid", GridJson(p.grid)},
                           {"base_scenario_id", plan.base_id}};
    out += line.dump() + "\n";
  }
  return out;
}

Result<std::vector<ManifestEntry>> ReadManifest(const std::string& path) {
  CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  std::vector<ManifestEntry> entries;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    const std::string where = path + ": line " + std::to_string(line_no);
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      ManifestEntry e;
      e.index = j.at("index").get<int64_t>();
      e.point_id = j.at("point_id").get<std::string>();
      e.base_scenario_id = j.at("base_scenario_id").get<std::string>();
      for (const auto& pair : j.at("grid")) {
        e.grid.emplace_back(pair.at(0).get<std::string>(), pair.at(1));
      }
      if (PointId(e.grid) != e.point_id) {
        return Status::Usage(where + ": point_id " + e.point_id +
                             " does not match its grid; the manifest was edited or is "
                             "from another capplan version; re-plan with --plan");
      }
      if (e.index != static_cast<int64_t>(entries.size())) {
        return Status::Usage(where + ": index " + std::to_string(e.index) + ", expected " +
                             std::to_string(entries.size()) + "; re-plan with --plan");
      }
      entries.push_back(std::move(e));
    } catch (const nlohmann::json::exception& ex) {
      return Status::Usage(where + ": " + ex.what());
    }
  }
  return entries;
}

nlohmann::json PointRecord(const SweepPlan& plan, const SweepPoint& point,
                           const nlohmann::json* summary, const std::string& error) {
  nlohmann::json r = {{"point_id", point.id},
                      {"index", point.index},
                      {"grid", GridJson(point.grid)},
                      {"base_scenario_id", plan.base_id},
                      {"status", error.empty() ? "ok" : "invalid"}};
  if (!error.empty()) r["error"] = error;
  if (summary != nullptr) r["summary"] = *summary;
  return r;
}

Result<std::optional<nlohmann::json>> ReadPointRecord(const std::string& dir,
                                                      const std::string& point_id,
                                                      const std::string& base_scenario_id) {
  const std::string path = PointPath(dir, point_id);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<nlohmann::json>();
  auto j = ReadJsonFile(path);
  if (!j.ok() || !j->is_object() || j->value("point_id", "") != point_id ||
      !j->contains("status")) {
    return std::optional<nlohmann::json>();  // unreadable: recompute it
  }
  const std::string base = j->value("base_scenario_id", "");
  if (base != base_scenario_id) {
    return Status::Usage(path + ": /base_scenario_id: result of another base scenario (" +
                         base + ", this sweep is " + base_scenario_id +
                         "); use a fresh --out directory");
  }
  return std::optional<nlohmann::json>(std::move(*j));
}

const std::vector<std::string>& SweepCsvMetrics() {
  static const std::vector<std::string> k = {
      "completed",          "failed",
      "duration_s",         "request_throughput",
      "output_throughput",  "output_throughput_per_gpu",
      "mean_ttft_ms",       "p90_ttft_ms",
      "p99_ttft_ms",        "mean_tpot_ms",
      "p90_tpot_ms",        "p99_tpot_ms",
      "p90_e2el_ms",        "gpus",
      "kv_capacity_tokens", "peak_kv_tokens",
      "kv_bound",           "cost_usd_per_million_output_tokens",
  };
  return k;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

namespace {
std::string Cell(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return CsvField(v.get<std::string>());
  return CsvField(v.dump());
}
}  // namespace

std::string SweepCsv(const std::vector<std::string>& paths,
                     const std::vector<nlohmann::json>& records) {
  std::string out = "point_id";
  for (const auto& p : paths) out += "," + CsvField(p);
  out += ",status";
  for (const auto& m : SweepCsvMetrics()) out += "," + m;
  out += "\n";
  for (const nlohmann::json& r : records) {
    out += r.value("point_id", "");
    const nlohmann::json& grid = r.at("grid");
    for (size_t i = 0; i < paths.size(); ++i) out += "," + (i < grid.size() ? Cell(grid[i][1]) : "");
    out += "," + Cell(r.value("status", nlohmann::json()));
    const nlohmann::json summary = r.value("summary", nlohmann::json::object());
    for (const auto& m : SweepCsvMetrics()) {
      out += "," + (summary.contains(m) ? Cell(summary[m]) : std::string());
    }
    out += "\n";
  }
  return out;
}

}  // namespace capplan
