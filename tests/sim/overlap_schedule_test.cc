// An engine that forms the next batch while the current one runs (SGLang's
// overlap event loop, vLLM's asynchronous scheduling) first admits a
// request that arrived during a step, or as a step ended, at the schedule
// after the next one. Timelines computed by hand: every step costs exactly
// 1 ms (FakePricer with only its fixed term), so a step started at k ms
// ends at k + 1; each run is checked with and without fast-forward.
#include <gtest/gtest.h>

#include <vector>

#include "sim/sim_config.h"
#include "tests/sim/millisecond_steps.h"

namespace capplan::sim {
namespace {

constexpr int64_t kMs = 1'000'000;

SimResult RunPool(bool overlap, int64_t concurrency, const std::vector<SimRequestSpec>& specs) {
  SimConfig c;
  c.scheduler = "sglang";
  c.kv_tokens_per_rank = 1 << 16;
  c.page_size = 1;
  c.sched.chunked_prefill_tokens = 1024;
  c.sched.overlap_schedule = overlap;
  c.concurrency = concurrency;
  return RunMillisecondSteps(c, specs);
}

// R0 = 4 in / 5 out at 0 ms, R1 = 4 in / 2 out at 1.5 ms, during R0's
// first decode step [1, 2].
//  Without overlap: the schedule at 2 ms sees R1 (prefill first): its
//  prompt runs [2, 3], first token at 3; R1's 2nd token at 4 beside R0's
//  3rd; R0's 4th and 5th at 5 and 6.
//  With overlap: the batch run at [2, 3] was formed as [1, 2] began (R0's
//  decode alone): R1 is first seen at 3 ms, its prompt runs [3, 4], first
//  token at 4, 2nd at 5; R0's tokens come at 1, 2, 3, 5, 6.
TEST(SimOverlapSchedule, AnArrivalDuringAStepWaitsOneStepMore) {
  const std::vector<SimRequestSpec> specs = {{0, 0, 4, 5, false}, {1, 3 * kMs / 2, 4, 2, false}};
  const SimResult plain = RunPool(false, 0, specs);
  ASSERT_EQ(plain.requests.size(), 2u);
  EXPECT_EQ(plain.requests[1].first_token_ns, 3 * kMs);
  EXPECT_EQ(plain.requests[1].finish_ns, 4 * kMs);
  EXPECT_EQ(plain.requests[0].finish_ns, 6 * kMs);
  const SimResult overlap = RunPool(true, 0, specs);
  ASSERT_EQ(overlap.requests.size(), 2u);
  EXPECT_EQ(overlap.requests[0].first_token_ns, 1 * kMs);  // an idle engine sees it at once
  EXPECT_EQ(overlap.requests[1].first_token_ns, 4 * kMs);
  EXPECT_EQ(overlap.requests[1].finish_ns, 5 * kMs);
  EXPECT_EQ(overlap.requests[0].finish_ns, 6 * kMs);
}

// A closed loop of 2: R0 = 4 in / 2 out, R1 = 4 in / 6 out, R2 = 4 in /
// 2 out, sent when R0 finishes (2 ms). Both prompts of R0 and R1 run
// [0, 1]; R0's 2nd token at 2 finishes it and R2 is sent as that step ends.
//  Without overlap: R2's prompt runs [2, 3] (first token 3, done at 4 beside
//  R1's 3rd token); R1's tokens at 1, 2, 4, 5, 6, 7.
//  With overlap: [2, 3] was formed as [1, 2] began and [3, 4] as [2, 3]
//  began, when R2 was not yet sent: R2 is seen at 4 ms, its prompt runs
//  [4, 5], first token 5 (TTFT 3 ms, not 1), done at 6; R1's tokens at 1,
//  2, 3, 4, 6, 7.
TEST(SimOverlapSchedule, AClosedLoopsNextRequestWaitsTwoSteps) {
  const std::vector<SimRequestSpec> specs = {
      {0, 0, 4, 2, false}, {1, 0, 4, 6, false}, {2, 0, 4, 2, false}};
  const SimResult plain = RunPool(false, 2, specs);
  ASSERT_EQ(plain.requests.size(), 3u);
  EXPECT_EQ(plain.requests[0].finish_ns, 2 * kMs);
  EXPECT_EQ(plain.requests[2].first_token_ns, 3 * kMs);
  EXPECT_EQ(plain.requests[2].finish_ns, 4 * kMs);
  EXPECT_EQ(plain.requests[1].finish_ns, 7 * kMs);
  const SimResult overlap = RunPool(true, 2, specs);
  ASSERT_EQ(overlap.requests.size(), 3u);
  EXPECT_EQ(overlap.requests[0].finish_ns, 2 * kMs);
  EXPECT_EQ(overlap.requests[2].first_token_ns, 5 * kMs);
  EXPECT_EQ(overlap.requests[2].finish_ns, 6 * kMs);
  EXPECT_EQ(overlap.requests[1].finish_ns, 7 * kMs);
}

}  // namespace
}  // namespace capplan::sim
