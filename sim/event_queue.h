// The simulator's event queue: a binary heap ordered by
//   (time_ns, priority class, sequence number)
// so the order of events at equal times is fixed and documented (ns-3 style):
//   1. kStepEnd      an instance's iteration completes: tokens are emitted,
//                    finished requests leave and free their KV pages (a
//                    closed loop issues its next request at this same time;
//                    a PD prefill pool starts the KV transfer of prompts
//                    computed in this iteration, keeping their pages);
//   2. kTransferDone (PD) a prompt's KV finished arriving at the decode
//                    pool: the prefill pool frees the pages it held and the
//                    request joins the decode pool's waiting queue;
//   3. kArrival      requests arriving now join a waiting queue (PD: the
//                    decode pool's prealloc queue);
//   4. kReserve      (PD) a decode instance reserves pages for the heads of
//                    its prealloc queues (FIFO), seeing every page freed at
//                    this time; a reserved request is sent to the prefill
//                    pool at this same time;
//   5. kSchedule     an idle instance forms its next batch, seeing everything
//                    that finished, arrived and was reserved at this time.
// Within a class, events fire in the order they were pushed (sequence),
// whichever pool they belong to. Co-located runs use classes 1, 3 and 5
// only, in the same relative order as before PD existed, so their results
// do not change. Time is integer nanoseconds: no float drift, exact ties.
#ifndef CAPPLAN_SIM_EVENT_QUEUE_H_
#define CAPPLAN_SIM_EVENT_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <queue>
#include <vector>

namespace capplan::sim {

enum class EventClass : uint8_t {
  kStepEnd = 0,
  kTransferDone = 1,
  kArrival = 2,
  kReserve = 3,
  kSchedule = 4
};

struct Event {
  int64_t time_ns = 0;
  EventClass cls = EventClass::kStepEnd;
  uint8_t pool = 0;  // which pool handles it (sim/serving_pool.h); fits the padding
  uint64_t seq = 0;
  int64_t target = 0;  // instance index, or request index for arrivals and transfers
};

class EventQueue {
 public:
  void Push(int64_t time_ns, EventClass cls, int64_t target, uint8_t pool = 0) {
    heap_.push(Event{time_ns, cls, pool, next_seq_++, target});
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  // Time of the earliest event; INT64_MAX when none is queued.
  int64_t next_time() const { return heap_.empty() ? INT64_MAX : heap_.top().time_ns; }
  Event Pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
      if (a.cls != b.cls) return a.cls > b.cls;
      return a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_EVENT_QUEUE_H_
