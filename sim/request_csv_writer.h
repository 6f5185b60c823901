// requests.csv's rows formatted and written on a thread of their own: the
// formatting costs about a tenth of a 1M-request run, which the simulation
// no longer waits for. Rows are handed over in batches through a short
// queue and the thread takes the batches in the order they came, so the
// file is byte for byte what one thread writes. A run of fewer rows than a
// batch starts no thread. Builds without threads (WebAssembly without
// pthreads) format each batch where it is handed over.
#ifndef CAPPLAN_SIM_REQUEST_CSV_WRITER_H_
#define CAPPLAN_SIM_REQUEST_CSV_WRITER_H_

#include <cstddef>
#include <exception>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
#define CAPPLAN_CSV_WRITER_THREAD 0
#else
#define CAPPLAN_CSV_WRITER_THREAD 1
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#endif

#include "sim/request_csv.h"
#include "sim/sim_state.h"

namespace capplan::sim {

class RequestCsvWriter {
 public:
  struct Options {
    // Off: every batch is formatted and written by the thread that adds
    // the rows (the only way where there are no threads).
    bool threaded = CAPPLAN_CSV_WRITER_THREAD != 0;
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

  void Add(const ReqState& r) {
    batch_.push_back(RowOf(r));
    if (batch_.size() >= opt_.batch_rows) Hand();
  }
  // Writes every row added so far and flushes the stream, whose state then
  // tells whether the writes succeeded; rethrows what formatting threw on
  // the writer thread (memory). Rows may be added after it.
  void Flush();

 private:
  void Hand();
  void Format(const std::vector<RequestRow>& rows);
  void WriteText();
  void WriteRest();
#if CAPPLAN_CSV_WRITER_THREAD
  void WriterLoop();
  void Stop();
#endif

  std::ostream* os_;
  Options opt_;
  std::vector<RequestRow> batch_;  // added, not yet handed over
  std::string text_;               // formatted, not yet written (the writer's)
  std::exception_ptr error_;       // the writer's, read once it is joined
#if CAPPLAN_CSV_WRITER_THREAD
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable work_, space_;
  // Guarded by mu_: batches handed over and not yet taken, emptied ones
  // for reuse, and whether the writer should end once `queued_` is empty.
  std::deque<std::vector<RequestRow>> queued_;
  std::vector<std::vector<RequestRow>> spare_;
  bool stop_ = false;
#endif
};

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_REQUEST_CSV_WRITER_H_
