#include "sim/sweep/grid.h"

#include <set>

#include "common/json_util.h"
#include "common/utf8.h"

namespace capplan::sim::sweep {

namespace {

// Splits on commas at nesting depth 0, outside double-quoted strings.
std::vector<std::string> SplitTopLevel(const std::string& s) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  bool in_str = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_str) {
      cur += c;
      if (c == '\\' && i + 1 < s.size()) {
        cur += s[++i];
      } else if (c == '"') {
        in_str = false;
      }
      continue;
    }
    if (c == '"') in_str = true;
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  parts.push_back(cur);
  return parts;
}

std::string Describe(const GridAssignment& grid) {
  std::string s;
  for (const auto& [path, value] : grid) {
    if (!s.empty()) s += " ";
    s += EchoValue(path) + "=" +
         EchoValue(value.is_string() ? value.get<std::string>() : value.dump());
  }
  return s;
}

}  // namespace

Result<GridAxis> ParseGridFlag(const std::string& flag) {
  const size_t eq = flag.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::Usage("--grid '" + EchoValue(flag) + "': expected dotted.path=v1,v2,... (e.g. " +
                         "--grid deployment.tp=4,8)");
  }
  GridAxis axis;
  axis.path = flag.substr(0, eq);
  // The path names JSON keys and point ids: it must be text.
  const std::string shown = "--grid " + EchoValue(axis.path);
  if (!IsUtf8(axis.path)) return Status::Usage(shown + ": the path is not valid UTF-8 text");
  std::set<std::string> seen;
  for (const std::string& raw : SplitTopLevel(flag.substr(eq + 1))) {
    if (raw.empty()) {
      return Status::Usage(shown + ": empty value in '" + EchoValue(flag) +
                           "'; list values as v1,v2,...");
    }
    CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json v, ParseFlagValue(raw, shown));
    if (!seen.insert(v.dump()).second) {
      return Status::Usage(shown + ": value '" + EchoValue(raw) +
                           "' listed twice; list each value once");
    }
    axis.raw.push_back(raw);
    axis.values.push_back(std::move(v));
  }
  return axis;
}

Result<nlohmann::json> ApplyGrid(const nlohmann::json& base, const GridAssignment& grid,
                                 const std::string& origin) {
  nlohmann::json doc = base;
  for (const auto& [path, value] : grid) {
    // An object value merges into an existing object (RFC 7386 merge patch)
    // so coupled fields move together: deployment={"tp":4,"gpus":4}.
    if (value.is_object()) {
      nlohmann::json* target = &doc;
      size_t start = 0;
      while (target != nullptr) {
        const size_t dot = path.find('.', start);
        const std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
        auto it = target->is_object() ? target->find(part) : target->end();
        target = it == target->end() ? nullptr : &*it;
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
      if (target != nullptr && target->is_object()) {
        target->merge_patch(value);
        continue;
      }
    }
    CAPPLAN_RETURN_IF_ERROR(SetDotted(&doc, path, value.dump(), origin));
  }
  return doc;
}

namespace {

// Each value alone first, so an unknown path or a mistyped value is blamed
// on the flag that introduced it rather than on some combination.
Status CheckEachValue(const nlohmann::json& base, const std::string& origin,
                      const std::vector<GridAxis>& axes, const PointValidator& validate) {
  for (const GridAxis& axis : axes) {
    for (const nlohmann::json& value : axis.values) {
      const GridAssignment single = {{axis.path, value}};
      auto doc = ApplyGrid(base, single, origin);
      Status st = doc.ok() ? validate(*doc) : doc.status();
      if (!st.ok() && st.code() != StatusCode::kInvalidConfig) {
        return Status::Usage("--grid " + Describe(single) + ": " + st.message());
      }
    }
  }
  return Status::Ok();
}

// The number of grid points (1 without axes), bounded far beyond any sweep
// that can run so the product stays exact.
Result<int64_t> CountPoints(const std::vector<GridAxis>& axes) {
  constexpr int64_t kMaxPoints = 100'000'000;
  int64_t total = 1;
  for (const GridAxis& axis : axes) {
    total *= static_cast<int64_t>(axis.values.size());
    if (total > kMaxPoints) {
      return Status::Usage("--grid: more than " + std::to_string(kMaxPoints) +
                           " points; split the sweep");
    }
  }
  return total;
}

}  // namespace

Result<SweepPlan> BuildSweepPlan(const nlohmann::json& base, const std::string& origin,
                                 const std::vector<GridAxis>& axes,
                                 const PointValidator& validate, PointChecks checks) {
  SweepPlan plan;
  plan.origin = origin;
  plan.base = base;
  plan.base_id = DocumentId(base);
  std::set<std::string> paths;
  for (const GridAxis& axis : axes) {
    if (axis.values.empty()) return Status::Usage("--grid " + EchoValue(axis.path) + ": no values");
    if (!paths.insert(axis.path).second) {
      return Status::Usage("--grid " + EchoValue(axis.path) +
                           ": path given twice; put all its values in one --grid flag");
    }
    plan.paths.push_back(axis.path);
  }
  CAPPLAN_RETURN_IF_ERROR(CheckEachValue(base, origin, axes, validate));
  CAPPLAN_ASSIGN_OR_RETURN(const int64_t total, CountPoints(axes));
  std::set<std::string> ids;
  std::vector<size_t> digit(axes.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    SweepPoint p;
    p.index = i;
    for (size_t a = 0; a < axes.size(); ++a) p.grid.emplace_back(axes[a].path, axes[a].values[digit[a]]);
    p.id = PointId(p.grid);
    if (!ids.insert(p.id).second) {
      return Status::Internal("point id collision for " + Describe(p.grid) +
                              "; report this with the grid flags");
    }
    CAPPLAN_ASSIGN_OR_RETURN(p.doc, ApplyGrid(base, p.grid, origin));
    const Status st = checks == PointChecks::kAll ? validate(p.doc) : Status::Ok();
    if (st.code() == StatusCode::kInvalidConfig) {
      p.invalid = st.message();
    } else if (!st.ok()) {
      return Status::Usage("grid point " + Describe(p.grid) + ": " + st.message());
    }
    plan.points.push_back(std::move(p));
    // Odometer increment, last axis fastest.
    for (size_t a = axes.size(); a-- > 0;) {
      if (++digit[a] < axes[a].values.size()) break;
      digit[a] = 0;
    }
  }
  return plan;
}

}  // namespace capplan::sim::sweep
