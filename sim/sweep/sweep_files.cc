#include "sim/sweep/sweep_files.h"

#include <filesystem>
#include <sstream>

#include "common/atomic_file.h"
#include "common/json_util.h"

namespace capplan::sim::sweep {

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
    CAPPLAN_ASSIGN_OR_RETURN(const nlohmann::json j, ParseJson(line, where));
    try {
      ManifestEntry e;
      e.index = j.at("index").get<int64_t>();
      e.point_id = j.at("point_id").get<std::string>();
      e.base_scenario_id = j.at("base_scenario_id").get<std::string>();
      for (const auto& pair : j.at("grid")) {
        if (!pair.is_array() || pair.size() != 2) {
          return Status::Usage(where + ": /grid: each entry must be a [path, value] pair; " +
                               "re-plan with --plan");
        }
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
      return Status::Usage(where + ": " + EchoValue(ex.what(), 200) + "; re-plan with --plan");
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

namespace {

// A point file is checked field by field before anything indexes into it:
// it may have been edited, or written by another capplan version.
Status CheckPointRecord(const nlohmann::json& j, const std::string& path,
                        const std::string& point_id) {
  const auto bad = [&](const std::string& field, const std::string& why) {
    return Status::Usage(path + ": /" + field + ": " + why +
                         "; delete the file and run the sweep again to recompute the point");
  };
  const auto grid = j.find("grid");
  if (grid == j.end() || !grid->is_array()) return bad("grid", "must be an array");
  GridAssignment pairs;
  for (const nlohmann::json& pair : *grid) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string()) {
      return bad("grid", "each entry must be a [path, value] pair");
    }
    pairs.emplace_back(pair[0].get<std::string>(), pair[1]);
  }
  if (PointId(pairs) != point_id) return bad("grid", "does not match point_id " + point_id);
  const auto index = j.find("index");
  if (index == j.end() || !index->is_number_integer()) return bad("index", "must be an integer");
  const std::string status = j["status"].is_string() ? j["status"].get<std::string>() : "";
  if (status != "ok" && status != "invalid") return bad("status", "must be \"ok\" or \"invalid\"");
  if (const auto e = j.find("error"); e != j.end() && !e->is_string()) {
    return bad("error", "must be a string");
  }
  const auto summary = j.find("summary");
  if (summary != j.end() && !summary->is_object()) return bad("summary", "must be an object");
  if (status == "ok" && summary == j.end()) return bad("summary", "missing for status \"ok\"");
  return Status::Ok();
}

}  // namespace

Result<std::optional<nlohmann::json>> ReadPointRecord(const std::string& dir,
                                                      const std::string& point_id,
                                                      const std::string& base_scenario_id) {
  const std::string path = PointPath(dir, point_id);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<nlohmann::json>();
  auto j = ReadJsonFile(path);
  if (!j.ok() || !j->is_object() || !j->contains("point_id") || (*j)["point_id"] != point_id ||
      !j->contains("status")) {
    return std::optional<nlohmann::json>();  // unreadable: recompute it
  }
  const auto base_it = j->find("base_scenario_id");
  const std::string base =
      base_it != j->end() && base_it->is_string() ? base_it->get<std::string>() : "";
  if (base != base_scenario_id) {
    return Status::Usage(path + ": /base_scenario_id: result of another base scenario (" +
                         EchoValue(base) + ", this sweep is " + base_scenario_id +
                         "); use a fresh --out directory");
  }
  CAPPLAN_RETURN_IF_ERROR(CheckPointRecord(*j, path, point_id));
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
    // Records come from ReadPointRecord, which checked their shape; the
    // guards keep a bad record from indexing past an array all the same.
    out += Cell(r.value("point_id", nlohmann::json()));
    const nlohmann::json grid = r.value("grid", nlohmann::json::array());
    for (size_t i = 0; i < paths.size(); ++i) {
      const bool have =
          grid.is_array() && i < grid.size() && grid[i].is_array() && grid[i].size() == 2;
      out += "," + (have ? Cell(grid[i][1]) : "");
    }
    out += "," + Cell(r.value("status", nlohmann::json()));
    nlohmann::json summary = r.value("summary", nlohmann::json::object());
    if (!summary.is_object()) summary = nlohmann::json::object();
    for (const auto& m : SweepCsvMetrics()) {
      out += "," + (summary.contains(m) ? Cell(summary[m]) : std::string());
    }
    out += "\n";
  }
  return out;
}

}  // namespace capplan::sim::sweep
