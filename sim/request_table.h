// The state of a pool's requests in flight, addressed by request index (an
// index into the run's RequestSource). A request gets a slot when the pool
// opens it (sent to the pool, or failed before it was) and gives it back
// when it leaves (done or failed): the table's size follows the requests in
// flight, not the workload, plus 4 bytes per request for the index map.
// Slots live in fixed chunks, so a reference stays valid while other
// requests open and close; a closed slot is reused by a later Open.
#ifndef CAPPLAN_SIM_REQUEST_TABLE_H_
#define CAPPLAN_SIM_REQUEST_TABLE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/sim_state.h"

namespace capplan::sim {

class RequestTable {
 public:
  explicit RequestTable(int64_t requests) : slot_(static_cast<size_t>(requests), kNever) {}

  // The open request idx.
  ReqState& operator[](int32_t idx) { return At(slot_[static_cast<size_t>(idx)]); }
  const ReqState& operator[](int32_t idx) const {
    return chunks_[static_cast<size_t>(slot_[static_cast<size_t>(idx)] >> kShift)]
                  [slot_[static_cast<size_t>(idx)] & kMask];
  }
  bool open(int32_t idx) const { return slot_[static_cast<size_t>(idx)] >= 0; }
  bool closed(int32_t idx) const { return slot_[static_cast<size_t>(idx)] == kClosed; }
  // A fresh state for idx, which must never have been opened.
  ReqState& Open(int32_t idx) {
    int32_t s;
    if (!free_.empty()) {
      s = free_.back();
      free_.pop_back();
    } else {
      s = next_++;
      if ((s >> kShift) == static_cast<int32_t>(chunks_.size())) {
        chunks_.push_back(std::make_unique<ReqState[]>(kChunk));
      }
    }
    slot_[static_cast<size_t>(idx)] = s;
    ++open_;
    ReqState& r = At(s);
    r = ReqState();
    r.idx = idx;
    return r;
  }
  // idx leaves; its slot is reused by a later Open.
  void Close(int32_t idx) {
    free_.push_back(slot_[static_cast<size_t>(idx)]);
    slot_[static_cast<size_t>(idx)] = kClosed;
    --open_;
  }
  int64_t size() const { return static_cast<int64_t>(slot_.size()); }
  int64_t open_count() const { return open_; }
  // Slots ever allocated: the most requests in flight at once.
  int64_t slots() const { return next_; }

 private:
  static constexpr int32_t kNever = -1, kClosed = -2;
  static constexpr int kShift = 10;
  static constexpr int32_t kChunk = 1 << kShift, kMask = kChunk - 1;
  ReqState& At(int32_t s) { return chunks_[static_cast<size_t>(s >> kShift)][s & kMask]; }

  std::vector<int32_t> slot_;  // per request: its slot, kNever or kClosed
  std::vector<std::unique_ptr<ReqState[]>> chunks_;
  std::vector<int32_t> free_;
  int32_t next_ = 0;
  int64_t open_ = 0;
};

// Receives each request's final state as it leaves a pool (done or failed),
// in the order they leave.
class RequestSink {
 public:
  virtual ~RequestSink() = default;
  virtual void OnRetired(const ReqState& r) = 0;
};

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_REQUEST_TABLE_H_
