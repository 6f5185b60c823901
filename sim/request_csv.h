// requests.csv: the header line, and one row per request. Times in ms are
// written as an iostream with precision 9 writes them (printf's %.9g), the
// format the file has always had. CSV is the one format: Debian 12 packages
// no Arrow or Parquet C++ library (`apt-cache search parquet` finds none),
// and pandas and every plotting tool read the CSV as it is.
#ifndef CAPPLAN_SIM_REQUEST_CSV_H_
#define CAPPLAN_SIM_REQUEST_CSV_H_

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>

#include "sim/sim_state.h"

namespace capplan::sim {

extern const char kRequestsCsvHeader[];
// Longer than any row: 6 integers of at most 20 characters, 6 times of at
// most 16 (%.9g), the separators and the status.
inline constexpr size_t kMaxRequestRowBytes = 256;

// What a row shows of a request: a copy small enough to be handed to
// another thread by the thousand (a third of a ReqState).
struct RequestRow {
  int64_t id = 0;
  int64_t arrival_ns = 0;
  int64_t first_token_ns = -1;
  int64_t finish_ns = -1;
  int64_t input = 0;
  int64_t generated = 0;
  int32_t instance = -1;
  int32_t rank = -1;
  int32_t retractions = 0;
  bool done = false;
  bool warmup = false;
};
RequestRow RowOf(const ReqState& r);

void AppendRequestRow(std::string* out, const RequestRow& r);
void AppendRequestRow(std::string* out, const ReqState& r);
void WriteRequestRow(std::ostream& os, const ReqState& r);
// The number formats of those rows, for a table with other columns (linked
// pools: sim/pd_link.h): an integer, and milliseconds as %.9g.
void AppendCsvInt(std::string* out, int64_t v);
void AppendCsvMs(std::string* out, double ms);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_REQUEST_CSV_H_
