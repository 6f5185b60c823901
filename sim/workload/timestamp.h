// Exact timestamp parsing for trace replay: every value becomes an integer
// nanosecond count straight from its decimal text, so replaying a trace
// never accumulates floating-point drift (a double holds only ~15.9
// significant digits: seconds since 1970 with 7 fractional digits, as the
// Azure traces write them, would already be rounded).
#ifndef CAPPLAN_SIM_WORKLOAD_TIMESTAMP_H_
#define CAPPLAN_SIM_WORKLOAD_TIMESTAMP_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace capplan::sim {

// "YYYY-MM-DD HH:MM:SS[.f{1,9}][Z|+HH:MM|-HH:MM|+HHMM]" ('T' may replace the
// space) -> nanoseconds since 1970-01-01 00:00 UTC. A timestamp without an
// offset is taken as UTC (Azure 2023 writes naive times; only differences
// matter for replay). Errors are Usage with a message that names the text.
Result<int64_t> ParseCivilTimeNs(std::string_view text);

// A non-negative decimal number ("123", "123.", "123.4567") times
// 10^ns_per_unit_digits nanoseconds: 9 for seconds, 6 for milliseconds.
// Digits finer than a nanosecond are truncated.
Result<int64_t> ParseDecimalNs(std::string_view text, int ns_per_unit_digits);

// Days from 1970-01-01 to the proleptic Gregorian date y-m-d (Howard
// Hinnant's days_from_civil algorithm, "chrono-Compatible Low-Level Date
// Algorithms").
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_WORKLOAD_TIMESTAMP_H_
