#include "sim/pd/sender_links.h"

#include <gtest/gtest.h>

namespace capplan::sim::pd {
namespace {

// 1,000 B per token over 1 GB/s, 10 layers, no latency: a 1,000-token
// prompt takes 1 ms on the wire, its last layer 0.1 ms.
KvTransferPlan Plan(bool overlap) {
  KvTransferPlan p;
  p.link_bytes_per_token = 1000;
  p.bandwidth_bytes_per_s = 1e9;
  p.num_layers = 10;
  p.layerwise_overlap = overlap;
  return p;
}

constexpr int64_t kMs = 1'000'000;

TEST(SenderLinks, PromptsFinishingTogetherQueueOnTheirRanksLink) {
  const KvTransferPlan plan = Plan(true);
  SenderLinks links(plan);
  // Three prompts computed on rank 0 from 0 to 2 ms: 3 ms of bytes over a
  // window of 2 ms. The first two fit the window (sent 0-1 and 1-2 ms);
  // only their last layers are exposed. The third sends 2-3 ms, 0.9 ms
  // past its uncontended end (2.1 ms).
  EXPECT_EQ(links.Send(0, 1000, 0, 2 * kMs), kMs / 10);
  EXPECT_EQ(links.Send(0, 1000, 0, 2 * kMs), kMs / 10);
  EXPECT_EQ(links.Send(0, 1000, 0, 2 * kMs), kMs / 10 + 9 * kMs / 10);
  // Another rank has its own link.
  EXPECT_EQ(links.Send(1, 1000, 0, 2 * kMs), kMs / 10);
  // Rank 0's link is idle again by 5 ms.
  EXPECT_EQ(links.Send(0, 1000, 4 * kMs, 5 * kMs), kMs / 10);
}

TEST(SenderLinks, WithoutOverlapSendsStartAtThePromptsEnd) {
  const KvTransferPlan plan = Plan(false);
  SenderLinks links(plan);
  EXPECT_EQ(links.Send(0, 1000, 0, 2 * kMs), kMs);
  EXPECT_EQ(links.Send(0, 1000, 0, 2 * kMs), 2 * kMs);  // waits for the first
}

TEST(SenderLinks, ALinkSlowerThanThePrefillExposesTheRest) {
  const KvTransferPlan plan = Plan(true);
  SenderLinks links(plan);
  // Computed in 0.5 ms, sent in 1 ms from admission: ends at 1 ms, 0.5 ms
  // after the prompt (the plan alone says 0.1 ms).
  EXPECT_EQ(plan.ExposedNs(1000), kMs / 10);
  EXPECT_EQ(links.Send(0, 1000, 0, kMs / 2), kMs / 2);
}

}  // namespace
}  // namespace capplan::sim::pd
