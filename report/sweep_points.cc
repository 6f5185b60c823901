#include "report/sweep_points.h"

#include <filesystem>
#include <sstream>

#include "common/atomic_file.h"
#include "common/json_util.h"

namespace capplan::report {

namespace fs = std::filesystem;

namespace {

std::string ManifestPath(const std::string& dir) { return (fs::path(dir) / "manifest.jsonl").string(); }

// Point ids in manifest order.
Result<std::vector<std::string>> ReadPointIds(const std::string& dir) {
  const std::string path = ManifestPath(dir);
  CAPPLAN_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  std::vector<std::string> ids;
  std::istringstream in(text);
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    CAPPLAN_ASSIGN_OR_RETURN(const nlohmann::json entry, ParseJson(line, where));
    const auto id = entry.is_object() ? entry.find("point_id") : entry.end();
    // Ids name files: only what sweep writes (hex digits) is accepted.
    if (!entry.is_object() || id == entry.end() || !id->is_string() || id->get<std::string>().empty() ||
        id->get<std::string>().find_first_not_of("0123456789abcdef") != std::string::npos) {
      return Status::Usage(where + ": /point_id: expected the point's hex id");
    }
    ids.push_back(id->get<std::string>());
  }
  return ids;
}

}  // namespace

bool IsSweepFolder(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(ManifestPath(dir), ec);
}

bool IsPointFile(const nlohmann::json& doc) {
  return doc.is_object() && doc.contains("point_id") && doc.contains("status");
}

Result<std::optional<Summary>> ReadPointSummary(const nlohmann::json& doc, const std::string& path) {
  JsonObject o(doc, path, "");
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  std::string status;
  CAPPLAN_RETURN_IF_ERROR(o.Get("status", &status, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckOneOf("status", status, {"ok", "invalid"}));
  if (status == "invalid") return std::optional<Summary>();
  const nlohmann::json* summary = o.Raw("summary");
  if (summary == nullptr) return o.Error("summary", "missing (a point with status ok has one)");
  CAPPLAN_ASSIGN_OR_RETURN(Summary s, ParseSummary(*summary, path + " /summary"));
  return std::optional<Summary>(std::move(s));
}

Result<std::vector<Summary>> LoadSweepFolder(const std::string& dir) {
  CAPPLAN_ASSIGN_OR_RETURN(const std::vector<std::string> ids, ReadPointIds(dir));
  std::vector<Summary> out;
  int missing = 0;
  std::string first_missing;
  for (const std::string& id : ids) {
    const std::string path = (fs::path(dir) / (id + ".json")).string();
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      if (missing++ == 0) first_missing = path;
      continue;
    }
    CAPPLAN_ASSIGN_OR_RETURN(const nlohmann::json doc, ReadJsonFile(path));
    CAPPLAN_ASSIGN_OR_RETURN(std::optional<Summary> s, ReadPointSummary(doc, path));
    if (s) out.push_back(std::move(*s));
  }
  if (missing > 0) {
    return Status::NotFound(dir + ": " + std::to_string(missing) + " of " +
                            std::to_string(ids.size()) + " sweep points have no file yet (" +
                            first_missing +
                            "); finish the sweep first (rerunning it resumes) or merge its shards");
  }
  if (out.empty()) {
    return Status::Invalid(dir + ": no sweep point ran (every configuration is invalid); "
                                 "nothing to report");
  }
  return out;
}

}  // namespace capplan::report
