// The state of a pool's requests in flight, addressed by request index (an
// index into the run's RequestSource). A request gets a slot when the pool
// opens it (sent to the pool, or failed before it was) and gives it back
// when it leaves (done or failed): the table's size follows the requests in
// flight, not the workload, plus an 8-byte pointer per request.
// Slots live in fixed chunks, so a reference stays valid while other
// requests open and close; a closed slot is reused by a later Open.
#ifndef CAPPLAN_SIM_REQUEST_TABLE_H_
#define CAPPLAN_SIM_REQUEST_TABLE_H_

#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "common/huge_pages.h"
#include "sim/sim_state.h"

namespace capplan::sim {

class RequestTable {
 public:
  explicit RequestTable(int64_t requests) {
    common::ReserveHugePages(&at_, static_cast<size_t>(requests));
    at_.assign(static_cast<size_t>(requests), nullptr);
  }

  // The open request idx: one load and the state itself, on the
  // simulator's hottest path.
  ReqState& operator[](int32_t idx) { return *at_[static_cast<size_t>(idx)]; }
  const ReqState& operator[](int32_t idx) const { return *at_[static_cast<size_t>(idx)]; }
  // The slot table itself, for a loop over many requests: it never moves
  // (one entry per request, sized at construction), so a loop may keep it
  // in a register where writes to the states would make it reload the
  // table's address for every request.
  ReqState* const* table() const { return at_.data(); }
  bool open(int32_t idx) const {
    const ReqState* p = at_[static_cast<size_t>(idx)];
    return p != nullptr && p != Closed();
  }
  bool closed(int32_t idx) const { return at_[static_cast<size_t>(idx)] == Closed(); }
  // A fresh state for idx, which must never have been opened.
  ReqState& Open(int32_t idx) {
    ReqState* r;
    if (!free_.empty()) {
      r = free_.back();
      free_.pop_back();
    } else {
      if ((next_ & kMask) == 0) chunks_.push_back(std::make_unique<ReqState[]>(kChunk));
      r = &chunks_.back()[next_ & kMask];
      ++next_;
    }
    at_[static_cast<size_t>(idx)] = r;
    ++open_;
    // Built in place: assigning a fresh ReqState() built it on the stack
    // with string stores and read it back, a store-forwarding stall on the
    // path every request takes.
    r = ::new (static_cast<void*>(r)) ReqState();
    r->idx = idx;
    return *r;
  }
  // idx leaves; its slot is reused by a later Open.
  void Close(int32_t idx) {
    free_.push_back(at_[static_cast<size_t>(idx)]);
    at_[static_cast<size_t>(idx)] = Closed();
    --open_;
  }
  int64_t size() const { return static_cast<int64_t>(at_.size()); }
  int64_t open_count() const { return open_; }
  // Slots ever allocated: the most requests open at once (in flight, plus
  // those that left during the current event, whose slots are not yet back).
  int64_t slots() const { return next_; }

 private:
  static constexpr int32_t kChunk = 1 << 10, kMask = kChunk - 1;
  // Marks a request that left (never dereferenced).
  static ReqState* Closed() {
    static ReqState closed;
    return &closed;
  }

  std::vector<ReqState*> at_;  // per request: its slot, null (never opened) or Closed()
  std::vector<std::unique_ptr<ReqState[]>> chunks_;
  std::vector<ReqState*> free_;
  int64_t next_ = 0;
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
