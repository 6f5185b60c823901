#include "sim/event_queue.h"

#include <gtest/gtest.h>

namespace capplan {
namespace {

TEST(SimEventQueue, OrdersByTimeThenClassThenPushOrder) {
  EventQueue q;
  q.Push(10, EventClass::kSchedule, 1);
  q.Push(10, EventClass::kArrival, 2);
  q.Push(10, EventClass::kStepEnd, 3);
  q.Push(5, EventClass::kSchedule, 4);
  q.Push(10, EventClass::kArrival, 5);
  q.Push(10, EventClass::kStepEnd, 6);
  std::vector<int64_t> got;
  while (!q.empty()) got.push_back(q.Pop().target);
  // t=5 first; at t=10 step ends (in push order), arrivals, then schedule.
  EXPECT_EQ(got, (std::vector<int64_t>{4, 3, 6, 2, 5, 1}));
}

TEST(SimEventQueue, LargeRandomSequenceIsSorted) {
  EventQueue q;
  uint64_t x = 12345;
  for (int i = 0; i < 10000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    q.Push(static_cast<int64_t>(x >> 50), static_cast<EventClass>((x >> 20) % 3), i);
  }
  Event prev = q.Pop();
  while (!q.empty()) {
    Event e = q.Pop();
    ASSERT_TRUE(prev.time_ns < e.time_ns ||
                (prev.time_ns == e.time_ns &&
                 (prev.cls < e.cls || (prev.cls == e.cls && prev.seq < e.seq))));
    prev = e;
  }
}

}  // namespace
}  // namespace capplan
