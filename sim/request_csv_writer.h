// requests.csv's rows formatted and written on a thread of their own
// (common/batch_pipe.h): the formatting costs about a tenth of a
// 1M-request run, which the simulation no longer waits for. The thread
// takes the rows in the order they came, so the file is byte for byte
// what one thread writes.
#ifndef CAPPLAN_SIM_REQUEST_CSV_WRITER_H_
#define CAPPLAN_SIM_REQUEST_CSV_WRITER_H_

#include <cstddef>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "common/batch_pipe.h"
#include "sim/request_csv.h"
#include "sim/sim_state.h"

namespace capplan::sim {

class RequestCsvWriter {
 public:
  struct Options {
    // Off: every batch is formatted and written by the thread that adds
    // the rows (the only way where there are no threads).
    bool threaded = common::kBatchPipeThreads;
    // Rows handed over at once: few enough handovers that their locking
    // costs nothing, small enough to stay in cache (64 bytes a row).
    size_t batch_rows = 4096;
  };
  // Writes `header` first; `os` belongs to the writer until Flush() or
  // destruction (the thread writes to it in between).
  RequestCsvWriter(std::ostream* os, std::string header, const Options& options);
  RequestCsvWriter(std::ostream* os, std::string header)
      : RequestCsvWriter(os, std::move(header), Options()) {}
  // Writes every row added, like Flush() but without flushing the stream:
  // a caller that returns early loses none of the rows. Errors go
  // unreported here (they stay in the stream's state).
  ~RequestCsvWriter();
  RequestCsvWriter(const RequestCsvWriter&) = delete;
  RequestCsvWriter& operator=(const RequestCsvWriter&) = delete;

  void Add(const ReqState& r) { pipe_.Add(RowOf(r)); }
  // Writes every row added so far and flushes the stream, whose state then
  // tells whether the writes succeeded; rethrows what formatting threw on
  // the writer thread (memory). Rows may be added after it.
  void Flush();

 private:
  void Format(const std::vector<RequestRow>& rows);
  void WriteText();

  std::ostream* os_;
  std::string text_;  // formatted, not yet written (the writer's)
  // Last: its thread formats into text_ until it is drained.
  common::BatchPipe<RequestRow> pipe_;
};

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_REQUEST_CSV_WRITER_H_
