#include "sim/sweep/point_id.h"

#include <cstdio>

namespace capplan::sim::sweep {

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = 14695981039346656037ULL;
  for (const unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

namespace {
std::string Hex(uint64_t v, int digits) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return std::string(buf, buf + digits);
}
}  // namespace

std::string CanonicalPointJson(const GridAssignment& point) {
  nlohmann::json obj = nlohmann::json::object();
  for (const auto& [path, value] : point) obj[path] = value;
  return obj.dump();
}

std::string PointId(const GridAssignment& point) {
  return Hex(Fnv1a64(CanonicalPointJson(point)), 12);
}

std::string DocumentId(const nlohmann::json& doc) { return Hex(Fnv1a64(doc.dump()), 16); }

}  // namespace capplan::sim::sweep
