// The KV link derived from where the pools sit, who sends how many bytes
// over which link, and the hand-set links a placement cannot carry; every
// figure worked by hand in the comments (bandwidths and latencies from the
// h200-sxm and gb200-nvl72 profiles and sim/pd/link_defaults.json).
#include "sim/pd/kv_fabric.h"

#include <gtest/gtest.h>

#include "models/card.h"
#include "sim/pd/kv_transfer.h"

namespace capplan::sim::pd {
namespace {

using models::NodeLink;

hw::HardwareProfile Profile(const char* name) {
  auto p = hw::LoadHardwareProfile(name);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

models::ModelCard Card(const char* name) {
  auto c = models::LoadModelCard(name);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return *c;
}

// `gpus` GPUs at TP = gpus, as `nodes` nodes joined by `link`; with DP
// attention every GPU is its own attention rank.
PoolFabric Pool(int gpus, int nodes = 1, NodeLink link = NodeLink::kRdma, bool dp = false) {
  PoolFabric f;
  f.layout.gpus = f.layout.tp = gpus;
  f.layout.nodes = nodes;
  f.layout.gpus_per_node = gpus / nodes;
  f.layout.node_link = link;
  f.layout.dp_attention = dp;
  f.layout.dp = dp ? gpus : 1;
  if (dp) f.layout.ep = gpus;
  return f;
}

TEST(PdKvFabric, AutoPicksNvlinkOnlyWhenBothPoolsShareOneDomain) {
  const hw::HardwareProfile h200 = Profile("h200-sxm");
  const hw::HardwareProfile gb200 = Profile("gb200-nvl72");
  // Prefill TP4 + decode TP4: 8 GPUs, one HGX baseboard.
  auto same_box = RouteKv(Pool(4), Pool(4), false, "auto", h200);
  ASSERT_TRUE(same_box.ok()) << same_box.status().message();
  EXPECT_EQ(same_box->link, "nvlink");
  EXPECT_TRUE(same_box->derived);
  EXPECT_EQ(same_box->placement, "both pools (8 GPUs) in one h200-sxm NVLink domain");
  // Prefill TP8 on one box, decode EP32 over 4 boxes on RDMA.
  auto wide = RouteKv(Pool(8), Pool(32, 4, NodeLink::kRdma, true), true, "auto", h200);
  ASSERT_TRUE(wide.ok()) << wide.status().message();
  EXPECT_EQ(wide->link, "rdma");
  EXPECT_EQ(wide->placement,
            "the decode pool spans 4 nodes joined by rdma: scale-out RDMA, one NIC per GPU");
  // The same pools as GB200 trays of 4 inside one NVL72: 40 of 72 GPUs.
  auto rack = RouteKv(Pool(8, 2, NodeLink::kNvlink), Pool(32, 8, NodeLink::kNvlink, true), true,
                      "auto", gb200);
  ASSERT_TRUE(rack.ok()) << rack.status().message();
  EXPECT_EQ(rack->link, "nvlink");
  // Two replicas of each: 80 GPUs, more than one rack.
  PoolFabric pre = Pool(8, 2, NodeLink::kNvlink), dec = Pool(32, 8, NodeLink::kNvlink, true);
  pre.replicas = dec.replicas = 2;
  auto two_racks = RouteKv(pre, dec, true, "auto", gb200);
  ASSERT_TRUE(two_racks.ok()) << two_racks.status().message();
  EXPECT_EQ(two_racks->link, "rdma");
  // A hand-set link stays as set where the placement allows it.
  auto by_hand = RouteKv(Pool(4), Pool(4), false, "rdma", h200);
  ASSERT_TRUE(by_hand.ok());
  EXPECT_EQ(by_hand->link, "rdma");
  EXPECT_FALSE(by_hand->derived);
}

// SGLang's rank mapping: P prefill and D decode attention-TP ranks.
TEST(PdKvFabric, SendersReceiversAndFanOutFollowTheRankMapping) {
  const hw::HardwareProfile h200 = Profile("h200-sxm");
  struct Case {
    int p, d;
    bool mla;
    int senders, receivers, fan_out;
  } cases[] = {
      {8, 8, false, 8, 8, 1},  // rank i -> rank i
      {2, 4, false, 2, 4, 2},  // each prefill rank writes its heads to 2 decode ranks
      {8, 2, false, 8, 2, 1},  // each decode rank pulls 4 head slices
      {8, 1, true, 1, 1, 1},   // MLA: one prefill rank sends the whole latent
      {1, 4, true, 1, 4, 4},   // MLA: the one prefill rank writes it to all 4
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.p) + " -> " + std::to_string(c.d));
    auto r = RouteKv(Pool(c.p), Pool(c.d), c.mla, "rdma", h200);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->senders, c.senders);
    EXPECT_EQ(r->receivers, c.receivers);
    EXPECT_EQ(r->fan_out, c.fan_out);
  }
}

// Llama 3.1 70B (80 layers, 8 KV heads, head_dim 128), BF16, prefill TP2 ->
// decode TP4 on one HGX H200 (6 GPUs: NVLink). Each decode rank holds 2 KV
// heads: 2 x 2 (K, V) x 128 x 2 B x 80 = 81,920 B/token. Each prefill rank
// holds 4 heads and writes 2 to each of its 2 decode ranks: 163,840
// B/token leave it, the busiest link. A request moves 4 x 81,920 = 327,680
// B/token in all (the full KV once). 1,000 tokens without overlap: 30 us +
// 163,840,000 B / 450e9 B/s = 30 us + 364.089 us = 394.089 us.
TEST(PdKvFabric, HandCheckedGqaFanOutBytesAndTime) {
  const hw::HardwareProfile h200 = Profile("h200-sxm");
  const models::ModelCard card = Card("llama-3.1-70b");
  const KvTransferSpec spec{"auto", false};
  auto route = RouteKv(Pool(2), Pool(4), false, spec.link, h200);
  ASSERT_TRUE(route.ok()) << route.status().message();
  EXPECT_EQ(route->link, "nvlink");
  auto p = PlanKvTransfer(card, Pool(4).layout, models::Dtype::kBf16, models::Dtype::kBf16, spec,
                          h200, &*route);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->wire_bytes_per_token, 81920);
  EXPECT_EQ(p->link_bytes_per_token, 163840);
  EXPECT_EQ(p->wire_bytes_per_token * p->route.receivers, 327680);
  EXPECT_NEAR(p->ExposedNs(1000), 30000 + 364089, 2);
}

// DeepSeek-R1, FP8 KV: 576 B latent + rope per layer x 61 = 35,136 B/token
// on every rank. Prefill TP8 on one H200 box -> decode DP attention EP32
// over 4 boxes: RDMA, one sender, one receiver. 2,000 tokens = 70,272,000 B:
// 77 us + 70,272,000 / 50e9 s = 77 + 1,405.44 us = 1,482.44 us without
// overlap; layer by layer 77 + 1,405.44 / 61 = 77 + 23.04 = 100.04 us. Inside
// one GB200 NVL72 (trays of 4): NVLink 900e9 B/s, 30 + 78.08 = 108.08 us.
TEST(PdKvFabric, HandCheckedMlaBytesAndTimeOverEachFabric) {
  const models::ModelCard card = Card("deepseek-v3");
  const hw::HardwareProfile h200 = Profile("h200-sxm");
  const PoolFabric dec = Pool(32, 4, NodeLink::kRdma, true);
  KvTransferSpec spec{"auto", false};
  auto route = RouteKv(Pool(8), dec, true, spec.link, h200);
  ASSERT_TRUE(route.ok()) << route.status().message();
  auto p = PlanKvTransfer(card, dec.layout, models::Dtype::kFp8E4m3, models::Dtype::kFp8E4m3,
                          spec, h200, &*route);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->link, "rdma");
  EXPECT_EQ(p->link_bytes_per_token, 35136);
  EXPECT_EQ(p->LinkBytes(2000), 70272000);
  EXPECT_NEAR(p->ExposedNs(2000), 1482440, 2);
  p->layerwise_overlap = true;
  EXPECT_NEAR(p->ExposedNs(2000), 100040, 2);

  const hw::HardwareProfile gb200 = Profile("gb200-nvl72");
  const PoolFabric tray_dec = Pool(32, 8, NodeLink::kNvlink, true);
  auto rack = RouteKv(Pool(8, 2, NodeLink::kNvlink), tray_dec, true, spec.link, gb200);
  ASSERT_TRUE(rack.ok()) << rack.status().message();
  auto q = PlanKvTransfer(card, tray_dec.layout, models::Dtype::kFp8E4m3,
                          models::Dtype::kFp8E4m3, spec, gb200, &*rack);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->link, "nvlink");
  EXPECT_NEAR(q->ExposedNs(2000), 108080, 2);
}

TEST(PdKvFabric, PoolsThatDoNotFitTheFabricAreOneLineErrorsNamingTheField) {
  const hw::HardwareProfile h200 = Profile("h200-sxm");
  auto two_boxes = RouteKv(Pool(8), Pool(8), false, "nvlink", h200);
  ASSERT_FALSE(two_boxes.ok());
  EXPECT_EQ(two_boxes.status().message(),
            "transfer/link: nvlink needs both pools in one NVLink domain, but prefill 8 + "
            "decode 8 GPUs exceed the 8 one h200-sxm NVLink domain joins (form_factor sxm); "
            "use \"rdma\" or \"auto\"");
  auto rdma_pool = RouteKv(Pool(2), Pool(4, 2, NodeLink::kRdma), false, "nvlink", h200);
  ASSERT_FALSE(rdma_pool.ok());
  EXPECT_NE(rdma_pool.status().message().find("the decode pool spans 2 nodes joined by rdma"),
            std::string::npos)
      << rdma_pool.status().message();
  // Attention TP 8 and 3 (tp 12 over 4 DP ranks) do not divide.
  PoolFabric odd = Pool(12);
  odd.layout.dp_attention = true;
  odd.layout.dp = 4;
  auto ratio = RouteKv(Pool(8), odd, false, "rdma", h200);
  ASSERT_FALSE(ratio.ok());
  EXPECT_EQ(ratio.status().message().rfind("decode/tp: prefill attention TP 8 and decode "
                                           "attention TP 3",
                                           0),
            0u)
      << ratio.status().message();
  EXPECT_EQ(RouteKv(Pool(1), Pool(1), false, "ib", h200).status().code(), StatusCode::kUsage);
}

}  // namespace
}  // namespace capplan::sim::pd
