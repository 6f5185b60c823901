// A run's memory is mostly per request (its spec, its simulation state, its
// requests.csv row), so a large `num_requests` is checked against the memory
// this machine has before anything is allocated: the user gets one line
// with the estimate and the way on, not an out-of-memory abort half-way.
// A run's wall time is checked the same way against a fixed budget.
#ifndef CAPPLAN_COMMON_MEMORY_BUDGET_H_
#define CAPPLAN_COMMON_MEMORY_BUDGET_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/status.h"

namespace capplan {

// Bytes the system says it can still hand out (MemAvailable), or
// std::nullopt when it cannot tell (then nothing is refused).
std::optional<int64_t> AvailableMemoryBytes();

// Process-wide settings: `--yes` turns the check off; tests and fuzzers set
// a fixed budget instead of the machine's.
void SetMemoryCheckDisabled(bool disabled);
void SetMemoryBudgetBytes(std::optional<int64_t> bytes);

// Usage error when `estimate_bytes` exceeds the budget (the fixed one, else
// AvailableMemoryBytes()):
//   "WHAT needs an estimated 23.0 GB of memory, more than the 20.1 GB
//    available; HOW, or pass --yes to try anyway"
Status CheckMemoryEstimate(int64_t estimate_bytes, std::string_view what, std::string_view how);

// A run estimated to take longer than this (seconds) is refused up front.
inline constexpr double kRunTimeBudgetS = 1800;
// Usage error when `estimate_s` exceeds kRunTimeBudgetS (`--yes` turns it
// off, as for memory):
//   "WHAT would take an estimated 2.1 h; HOW, or pass --yes to run it anyway"
Status CheckTimeEstimate(double estimate_s, std::string_view what, std::string_view how);

}  // namespace capplan

#endif  // CAPPLAN_COMMON_MEMORY_BUDGET_H_
