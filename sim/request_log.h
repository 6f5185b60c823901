// What a run keeps of its requests once they leave the pool: the end-to-end
// statistics, a requests.csv row each, and (when asked) every final state.
// Requests leave in completion order; the log passes them on in request
// index order, holding the ones that finished early until those before them
// have, so the statistics sum and the CSV rows come in the same order as
// for a run that kept every request. What waits is bounded by how far
// completions run ahead of the earliest request still in flight.
#ifndef CAPPLAN_SIM_REQUEST_LOG_H_
#define CAPPLAN_SIM_REQUEST_LOG_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "common/batch_pipe.h"
#include "sim/metrics.h"
#include "sim/request_csv.h"
#include "sim/request_csv_writer.h"
#include "sim/request_table.h"
#include "sim/sim_state.h"

namespace capplan::sim {

class RequestLog : public RequestSink {
 public:
  struct Options {
    SloLimits slo = {};
    std::ostream* csv = nullptr;            // requests.csv, header first
    std::vector<ReqState>* keep = nullptr;  // every final state, index order
    int64_t expected = 0;                   // requests the run will pass on
    E2eAccumulator::TtftSplit ttft_split = E2eAccumulator::TtftSplit::kNone;
    // Another table instead of requests.csv's rows: its header line and a
    // request's row (linked pools write each request's time in each stage).
    const char* csv_header = nullptr;
    std::function<void(std::string*, const ReqState&)> csv_row = nullptr;
    // The log keeps its own thread from this many expected requests on
    // (where threads exist): below it a run is short and the log's share of
    // it small, and a sweep of many short runs would start and join a
    // thread for each. Never when csv_row is set: those rows read state the run
    // goes on changing, so they are formatted as requests leave.
    int64_t thread_from = int64_t{1} << 14;
  };
  explicit RequestLog(const Options& options);
  // Writes the rows still in the block: a caller that returns early (an
  // error, an exception) loses none of those already passed.
  ~RequestLog() override;
  RequestLog(const RequestLog&) = delete;
  RequestLog& operator=(const RequestLog&) = delete;

  void OnRetired(const ReqState& r) override;
  // Every request retired so far passed on. The csv rows go to the stream
  // in large blocks (requests.csv's from a thread of their own:
  // sim/request_csv_writer.h); this writes the rest and flushes the
  // stream (the destructor writes them too; Flush lets a run check the
  // stream before it reports).
  void Flush();
  // Requests passed on (the first `passed()` indexes); a finished run has
  // passed every request.
  // Each accessor first waits for the log's thread, if any, to pass on
  // every request retired so far.
  int64_t passed() const {
    Settle();
    return next_;
  }
  const E2eAccumulator& e2e() const {
    Settle();
    return e2e_;
  }
  // The most requests held at once, waiting for an earlier one.
  int64_t peak_held() const {
    Settle();
    return peak_held_;
  }

 private:
  void Settle() const {
    if (pipe_ != nullptr) pipe_->Drain();
  }
  // Holds r until those before it have come, then passes them on.
  void Take(const ReqState& r);
  void Pass(const ReqState& r);
  void WriteCsvBlock();

  Options opt_;
  E2eAccumulator e2e_;
  std::unique_ptr<RequestCsvWriter> rows_;  // requests.csv's own rows
  // Another table's rows (Options::csv_row) not yet written to opt_.csv:
  // formatted here, as they read state the run goes on changing.
  std::string csv_block_;
  std::deque<ReqState> held_;  // indexes next_, next_ + 1, ...
  std::deque<bool> have_;
  int64_t held_count_ = 0, peak_held_ = 0;
  int32_t next_ = 0;
  // Last: its thread takes requests into the members above until drained.
  std::unique_ptr<common::BatchPipe<ReqState>> pipe_;
};

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_REQUEST_LOG_H_
