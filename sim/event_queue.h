// The simulator's event queue: a binary heap ordered by
//   (time_ns, priority class, sequence number)
// so the order of events at equal times is fixed and documented (ns-3 style):
//   1. kStepEnd   an instance's iteration completes: tokens are emitted,
//                 finished requests leave and free their KV pages (a closed
//                 loop issues its next request at this same time);
//   2. kArrival   requests arriving now join a waiting queue;
//   3. kSchedule  an idle instance forms its next batch, seeing everything
//                 that finished and arrived at this time.
// Within a class, events fire in the order they were pushed (sequence).
// Time is integer nanoseconds: no float drift, exact ties.
#ifndef CAPPLAN_SIM_EVENT_QUEUE_H_
#define CAPPLAN_SIM_EVENT_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <queue>
#include <vector>

namespace capplan {

enum class EventClass : uint8_t { kStepEnd = 0, kArrival = 1, kSchedule = 2 };

struct Event {
  int64_t time_ns = 0;
  EventClass cls = EventClass::kStepEnd;
  uint64_t seq = 0;
  int64_t target = 0;  // instance index, or request index for arrivals
};

class EventQueue {
 public:
  void Push(int64_t time_ns, EventClass cls, int64_t target) {
    heap_.push(Event{time_ns, cls, next_seq_++, target});
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
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

}  // namespace capplan

#endif  // CAPPLAN_SIM_EVENT_QUEUE_H_
