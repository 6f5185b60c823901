// Transfer bytes and dtype conversion per model card, checked against the
// models/ KV layout and, for two cards, against hand-computed bytes.
#include "sim/pd/kv_transfer.h"

#include <gtest/gtest.h>

#include "models/memory.h"

namespace capplan::sim::pd {
namespace {

hw::HardwareProfile Profile() {
  auto p = hw::LoadHardwareProfile("h200-sxm");
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

// A hand-set RDMA link: without a route (sim/pd/kv_fabric.h) "auto" has
// nothing to derive from.
const KvTransferSpec kRdma{"rdma", true};

models::ParallelLayout Tp(int tp) {
  models::ParallelLayout l;
  l.gpus = tp;
  l.tp = tp;
  return l;
}

TEST(PdKvTransfer, ConvertsToTheNarrowerDtypeOnTheWire) {
  const hw::HardwareProfile prof = Profile();
  for (const char* name : {"llama-3.1-8b", "llama-3.1-70b", "kimi-k2.6", "glm-5.2",
                           "deepseek-v3", "qwen3-235b-a22b"}) {
    SCOPED_TRACE(name);
    auto card = models::LoadModelCard(name);
    ASSERT_TRUE(card.ok()) << card.status().message();
    auto bf16 = models::ComputeKvLayout(*card, Tp(8), models::Dtype::kBf16);
    auto fp8 = models::ComputeKvLayout(*card, Tp(8), models::Dtype::kFp8E4m3);
    ASSERT_TRUE(bf16.ok() && fp8.ok());
    ASSERT_LT(fp8->bytes_per_token, bf16->bytes_per_token);
    for (auto [src, dst] : {std::pair{models::Dtype::kBf16, models::Dtype::kFp8E4m3},
                            std::pair{models::Dtype::kFp8E4m3, models::Dtype::kBf16},
                            std::pair{models::Dtype::kBf16, models::Dtype::kBf16}}) {
      auto p = PlanKvTransfer(*card, Tp(8), src, dst, kRdma, prof);
      ASSERT_TRUE(p.ok()) << p.status().message();
      const int64_t want_src =
          src == models::Dtype::kBf16 ? bf16->bytes_per_token : fp8->bytes_per_token;
      const int64_t want_dst =
          dst == models::Dtype::kBf16 ? bf16->bytes_per_token : fp8->bytes_per_token;
      EXPECT_EQ(p->src_bytes_per_token, want_src);
      EXPECT_EQ(p->dst_bytes_per_token, want_dst);
      EXPECT_EQ(p->wire_bytes_per_token, std::min(want_src, want_dst));
      EXPECT_EQ(p->WireBytes(1000), 1000 * p->wire_bytes_per_token);
    }
  }
}

// Llama 3.1 8B (models/cards: 32 layers, 8 KV heads, head_dim 128): BF16 K+V
// = 2 * 8 * 128 * 2 B * 32 = 131072 B/token on one GPU; at TP8 each rank holds
// one KV head: 16384 B/token.
TEST(PdKvTransfer, HandCheckedGqaBytes) {
  auto card = models::LoadModelCard("llama-3.1-8b");
  ASSERT_TRUE(card.ok());
  auto p1 = PlanKvTransfer(*card, Tp(1), models::Dtype::kBf16, models::Dtype::kBf16, kRdma, Profile());
  auto p8 = PlanKvTransfer(*card, Tp(8), models::Dtype::kBf16, models::Dtype::kBf16, kRdma, Profile());
  ASSERT_TRUE(p1.ok() && p8.ok());
  EXPECT_EQ(p1->wire_bytes_per_token, 131072);
  EXPECT_EQ(p8->wire_bytes_per_token, 16384);
}

// Kimi K2.6 (MLA, 61 layers, kv_lora_rank 512 + rope 64 = 576 values per
// layer): BF16 latent = 576 * 2 B * 61 = 70272 B/token on every rank (MLA
// latents are not sharded over TP, so each decode rank receives all of it).
TEST(PdKvTransfer, HandCheckedMlaBytes) {
  auto card = models::LoadModelCard("kimi-k2.6");
  ASSERT_TRUE(card.ok());
  auto p = PlanKvTransfer(*card, Tp(8), models::Dtype::kBf16, models::Dtype::kBf16, kRdma, Profile());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->wire_bytes_per_token, 70272);
}

// NVLink, no overlap: 30 us (sim/pd/link_defaults.json) + 1024 tokens *
// 131072 B / 450e9 B/s (h200-sxm profile) = 30 us + 298.262 us.
TEST(PdKvTransfer, HandCheckedTime) {
  auto card = models::LoadModelCard("llama-3.1-8b");
  ASSERT_TRUE(card.ok());
  KvTransferSpec spec;
  spec.link = "nvlink";
  spec.layerwise_overlap = false;
  auto p =
      PlanKvTransfer(*card, Tp(1), models::Dtype::kBf16, models::Dtype::kBf16, spec, Profile());
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR(p->ExposedNs(1024), 30000 + 298262, 2);
  spec.layerwise_overlap = true;  // only the last of 32 layers is exposed
  auto q =
      PlanKvTransfer(*card, Tp(1), models::Dtype::kBf16, models::Dtype::kBf16, spec, Profile());
  ASSERT_TRUE(q.ok());
  EXPECT_NEAR(q->ExposedNs(1024), 30000 + 298262 / 32.0, 2);
  spec.link = "rdma";  // 50e9 B/s, 77 us
  auto r =
      PlanKvTransfer(*card, Tp(1), models::Dtype::kBf16, models::Dtype::kBf16, spec, Profile());
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->ExposedNs(1024), 77000 + 134217728 / 50e9 * 1e9 / 32, 2);
}

TEST(PdKvTransfer, UnknownLinkIsAUsageError) {
  auto card = models::LoadModelCard("llama-3.1-8b");
  ASSERT_TRUE(card.ok());
  KvTransferSpec spec;
  spec.link = "infiniband";
  auto p =
      PlanKvTransfer(*card, Tp(1), models::Dtype::kBf16, models::Dtype::kBf16, spec, Profile());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUsage);
}

}  // namespace
}  // namespace capplan::sim::pd
