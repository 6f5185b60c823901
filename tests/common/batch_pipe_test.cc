#include "common/batch_pipe.h"

#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <vector>

namespace capplan::common {
namespace {

// What the consumer sees, threaded or not: every item once, in order.
std::vector<int> Through(bool threaded, size_t batch, int n) {
  std::vector<int> seen;
  {
    BatchPipe<int> pipe([&seen](std::vector<int>& items) {
      seen.insert(seen.end(), items.begin(), items.end());
    }, batch, threaded);
    for (int i = 0; i < n; ++i) pipe.Add(i);
    pipe.Drain();
    EXPECT_EQ(seen.size(), static_cast<size_t>(n));
    for (int i = n; i < n + 5; ++i) pipe.Add(i);  // after a drain, and left to the destructor
  }
  return seen;
}

TEST(BatchPipe, TheConsumerSeesEveryItemInOrder) {
  for (bool threaded : {false, true}) {
    for (size_t batch : {size_t{1}, size_t{7}, size_t{1000}}) {
      std::vector<int> want(10'005);
      std::iota(want.begin(), want.end(), 0);
      EXPECT_EQ(Through(threaded, batch, 10'000), want) << threaded << " " << batch;
    }
  }
}

TEST(BatchPipe, DrainRethrowsWhatTheConsumerThrewOnItsThread) {
  int consumed = 0;
  BatchPipe<int> pipe([&consumed](std::vector<int>& items) {
    if (items.front() >= 20) throw std::runtime_error("out of room");
    consumed += static_cast<int>(items.size());
  }, 10, true);
  for (int i = 0; i < 100; ++i) pipe.Add(i);  // never waits on the stopped consumer
  EXPECT_THROW(pipe.Drain(), std::runtime_error);
  if (kBatchPipeThreads) {
    EXPECT_EQ(consumed, 20);
  }
  pipe.Add(1);
  EXPECT_NO_THROW(pipe.Drain());
}

}  // namespace
}  // namespace capplan::common
