#include "common/memory_budget.h"

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace capplan {

namespace {

std::atomic<bool> g_disabled{false};
// -1: no fixed budget (use the machine's).
std::atomic<int64_t> g_budget{-1};

std::string Gigabytes(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GB", static_cast<double>(bytes) / 1e9);
  return buf;
}

}  // namespace

std::optional<int64_t> AvailableMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    int64_t kib = 0;
    if (fields >> kib && kib > 0) return kib * 1024;
    return std::nullopt;
  }
  return std::nullopt;
}

void SetMemoryCheckDisabled(bool disabled) { g_disabled = disabled; }

void SetMemoryBudgetBytes(std::optional<int64_t> bytes) { g_budget = bytes ? *bytes : -1; }

Status CheckMemoryEstimate(int64_t estimate_bytes, std::string_view what, std::string_view how) {
  if (g_disabled) return Status::Ok();
  std::optional<int64_t> budget;
  if (g_budget >= 0) {
    budget = g_budget.load();
  } else {
    budget = AvailableMemoryBytes();
  }
  if (!budget || estimate_bytes <= *budget) return Status::Ok();
  return Status::Usage(std::string(what) + " needs an estimated " + Gigabytes(estimate_bytes) +
                       " of memory, more than the " + Gigabytes(*budget) + " available; " +
                       std::string(how) + ", or pass --yes to try anyway");
}

Status CheckTimeEstimate(double estimate_s, std::string_view what, std::string_view how) {
  if (g_disabled || !(estimate_s > kRunTimeBudgetS)) return Status::Ok();
  char buf[32];
  if (estimate_s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%.1f h", estimate_s / 3600);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f min", estimate_s / 60);
  }
  return Status::Usage(std::string(what) + " would take an estimated " + buf + "; " +
                       std::string(how) + ", or pass --yes to run it anyway");
}

}  // namespace capplan
