// Canonical sweep-point ids. A point is the set of grid overrides applied to
// the base scenario; its id must be the same in every process and on every
// machine so that shards, resumed runs and merges agree on file names.
//
// Definition (documented in sim/sweep/README.md):
//   canonical = compact JSON (nlohmann dump, no spaces) of an object mapping
//               each dotted grid path to its JSON value; object keys sort
//               byte-wise, so the order of --grid flags does not matter.
//   id        = first 12 hex digits (top 48 bits) of FNV-1a 64 of canonical.
// Values are hashed as typed: 8 and 8.0 are different points.
#ifndef CAPPLAN_SIM_SWEEP_POINT_ID_H_
#define CAPPLAN_SIM_SWEEP_POINT_ID_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace capplan::sim::sweep {

// FNV-1a 64-bit (offset basis 14695981039346656037, prime 1099511628211, the
// published FNV parameters).
uint64_t Fnv1a64(std::string_view bytes);

// Path -> value pairs of one point, in grid order.
using GridAssignment = std::vector<std::pair<std::string, nlohmann::json>>;

std::string CanonicalPointJson(const GridAssignment& point);
std::string PointId(const GridAssignment& point);
// 16 hex digits of FNV-1a 64 over the compact dump of a whole document: tells
// whether an output directory holds results of the same base scenario.
std::string DocumentId(const nlohmann::json& doc);

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_POINT_ID_H_
