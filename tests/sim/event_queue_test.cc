#include "sim/event_queue.h"

#include <gtest/gtest.h>

namespace capplan::sim {
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

// PD classes (sim/event_queue.h): at one time, step ends, then transfers
// completing, arrivals, reservations, schedules; push order within a class,
// whichever pool.
TEST(SimEventQueue, PdClassesSitBetweenTheCoreOnes) {
  EventQueue q;
  q.Push(7, EventClass::kSchedule, 1, 0);
  q.Push(7, EventClass::kReserve, 2, 1);
  q.Push(7, EventClass::kArrival, 3, 1);
  q.Push(7, EventClass::kTransferDone, 4, 0);
  q.Push(7, EventClass::kStepEnd, 5, 1);
  q.Push(7, EventClass::kStepEnd, 6, 0);
  q.Push(7, EventClass::kTransferDone, 7, 1);
  std::vector<int64_t> got;
  std::vector<int> pools;
  while (!q.empty()) {
    const Event e = q.Pop();
    got.push_back(e.target);
    pools.push_back(e.pool);
  }
  EXPECT_EQ(got, (std::vector<int64_t>{5, 6, 4, 7, 3, 2, 1}));
  EXPECT_EQ(pools, (std::vector<int>{1, 0, 0, 1, 1, 1, 0}));
}

TEST(SimEventQueue, LargeRandomSequenceIsSorted) {
  EventQueue q;
  uint64_t x = 12345;
  for (int i = 0; i < 10000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    q.Push(static_cast<int64_t>(x >> 50), static_cast<EventClass>((x >> 20) % 5), i,
           static_cast<uint8_t>((x >> 30) % 2));
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
}  // namespace capplan::sim
