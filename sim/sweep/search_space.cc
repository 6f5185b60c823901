#include "sim/sweep/search_space.h"

#include <set>
#include <string_view>

#include "common/did_you_mean.h"
#include "common/json_util.h"

namespace capplan::sim::sweep {

namespace {

// "request_rate": a range to bisect (min_req_per_s, max_req_per_s, rel_tol)
// or one rate every configuration must meet (fixed_per_s), the question a
// sizing search asks: what passes at the load the planner expects.
Status ParseRate(JsonObject& rate, SearchSpace* s) {
  CAPPLAN_RETURN_IF_ERROR(rate.Get("path", &s->rate_path));
  if (rate.Has("fixed_per_s")) {
    for (const char* key : {"min_req_per_s", "max_req_per_s", "rel_tol"}) {
      if (rate.Has(key)) {
        return rate.Error(key,
                          "give fixed_per_s (one rate) or min_req_per_s and "
                          "max_req_per_s (a range to bisect), not both");
      }
    }
    CAPPLAN_RETURN_IF_ERROR(rate.Get("fixed_per_s", &s->rate_min, /*required=*/true));
    CAPPLAN_RETURN_IF_ERROR(rate.CheckRange("fixed_per_s", s->rate_min, 1e-9, 1e9));
    s->rate_max = s->rate_min;
    return rate.Finish();
  }
  CAPPLAN_RETURN_IF_ERROR(rate.Get("min_req_per_s", &s->rate_min, /*required=*/true));
  CAPPLAN_RETURN_IF_ERROR(rate.Get("max_req_per_s", &s->rate_max, /*required=*/true));
  CAPPLAN_RETURN_IF_ERROR(rate.Get("rel_tol", &s->rate_rel_tol));
  CAPPLAN_RETURN_IF_ERROR(rate.CheckRange("min_req_per_s", s->rate_min, 1e-9, 1e9));
  CAPPLAN_RETURN_IF_ERROR(rate.CheckRange("max_req_per_s", s->rate_max, s->rate_min, 1e9));
  CAPPLAN_RETURN_IF_ERROR(rate.CheckRange("rel_tol", s->rate_rel_tol, 1e-6, 1.0));
  return rate.Finish();
}

Status ParseSmallestPassing(JsonObject& root, SearchSpace* s) {
  if (!root.Has("smallest_passing")) return Status::Ok();
  std::string path;
  CAPPLAN_RETURN_IF_ERROR(root.Get("smallest_passing", &path, /*required=*/true));
  std::vector<std::string> names;
  for (const auto& a : s->axes) {
    if (a.path == path) {
      s->smallest_passing = path;
      return Status::Ok();
    }
    names.push_back(a.path);
  }
  return root.Error("smallest_passing", "'" + EchoValue(path) +
                                            "' is not one of the axes (name the axis whose "
                                            "values are listed smallest first)" +
                                            DidYouMean(path, names));
}

}  // namespace

const char* RateUnit(const std::string& path) {
  static constexpr std::string_view kSessionRate = "session_rate";
  const size_t dot = path.rfind('.');
  const std::string_view last =
      dot == std::string::npos ? std::string_view(path) : std::string_view(path).substr(dot + 1);
  return last == kSessionRate ? "sessions/s" : "req/s";
}

Result<SearchSpace> ParseSearchSpace(const nlohmann::json& doc, const std::string& origin) {
  SearchSpace s;
  s.origin = origin;
  JsonObject root(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject axes, root.Child("axes", /*required=*/true));
  for (const auto& [path, values] : axes.json().items()) {
    axes.Touch(path);
    if (!values.is_array() || values.empty()) {
      return axes.Error(path, "must be a non-empty array of values, e.g. [4, 8]");
    }
    GridAxis axis;
    axis.path = path;
    std::set<std::string> seen;
    for (const auto& v : values) {
      if (!seen.insert(v.dump()).second) {
        return axes.Error(path, "value " + v.dump() + " listed twice");
      }
      axis.raw.push_back(v.dump());
      axis.values.push_back(v);
    }
    s.axes.push_back(std::move(axis));
  }
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject rate, root.Child("request_rate", /*required=*/true));
  CAPPLAN_RETURN_IF_ERROR(ParseRate(rate, &s));
  for (const auto& a : s.axes) {
    if (a.path == s.rate_path) {
      return axes.Error(a.path, "is the bisected request-rate path; remove it from axes");
    }
  }
  CAPPLAN_RETURN_IF_ERROR(ParseSmallestPassing(root, &s));
  std::optional<int64_t> budget;
  CAPPLAN_RETURN_IF_ERROR(root.Get("max_total_gpus", &budget));
  if (budget) {
    CAPPLAN_RETURN_IF_ERROR(root.CheckRange("max_total_gpus", static_cast<double>(*budget), 1,
                                            1e6));
    s.max_total_gpus = static_cast<int>(*budget);
  }
  CAPPLAN_RETURN_IF_ERROR(root.Get("top_n", &s.top_n));
  CAPPLAN_RETURN_IF_ERROR(root.CheckRange("top_n", s.top_n, 1, 1000));
  CAPPLAN_RETURN_IF_ERROR(root.Finish({"description"}));
  return s;
}

Result<SearchSpace> LoadSearchSpace(const std::string& path) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  return ParseSearchSpace(doc, path);
}

}  // namespace capplan::sim::sweep
