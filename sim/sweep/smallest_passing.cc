#include "sim/sweep/smallest_passing.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>

#include "sim/sweep/point_id.h"

namespace capplan::sim::sweep {

namespace {

// A configuration of the space, feasible (ranked_index >= 0) or pruned.
struct Entry {
  int64_t index = 0;
  const GridAssignment* grid = nullptr;
  int ranked_index = -1;
};

std::vector<Entry> EntriesInSpaceOrder(const SearchResult& r) {
  std::vector<Entry> entries;
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    entries.push_back({r.ranked[i].index, &r.ranked[i].grid, static_cast<int>(i)});
  }
  for (const PrunedConfig& p : r.pruned) entries.push_back({p.index, &p.grid, -1});
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.index < b.index; });
  return entries;
}

}  // namespace

std::vector<SmallestPassing> FindSmallestPassing(const SearchSpace& space,
                                                 const SearchResult& result) {
  std::vector<SmallestPassing> rows;
  if (!space.smallest_passing) return rows;
  const std::string& axis_path = *space.smallest_passing;
  const auto axis = std::find_if(space.axes.begin(), space.axes.end(),
                                 [&](const GridAxis& a) { return a.path == axis_path; });
  if (axis == space.axes.end()) return rows;
  auto position = [&](const nlohmann::json& v) {
    return std::find(axis->values.begin(), axis->values.end(), v) - axis->values.begin();
  };
  std::map<std::string, size_t> row_of;  // the other axes' canonical JSON -> row
  std::vector<std::ptrdiff_t> best_position;
  for (const Entry& e : EntriesInSpaceOrder(result)) {
    SmallestPassing key;
    nlohmann::json value;
    for (const auto& [path, v] : *e.grid) {
      if (path == axis_path) {
        value = v;
      } else {
        key.others.emplace_back(path, v);
      }
    }
    const auto [it, added] = row_of.emplace(CanonicalPointJson(key.others), rows.size());
    if (added) {
      rows.push_back(std::move(key));
      best_position.push_back(std::ssize(axis->values));
    }
    if (e.ranked_index < 0) continue;
    const std::ptrdiff_t at = position(value);
    if (at < best_position[it->second]) {
      best_position[it->second] = at;
      rows[it->second].value = value;
      rows[it->second].ranked_index = e.ranked_index;
    }
  }
  return rows;
}

}  // namespace capplan::sim::sweep
