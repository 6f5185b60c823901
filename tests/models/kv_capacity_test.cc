// KV bytes per token and KV capacity for every card x {BF16, FP8} KV x
// {SGLang, vLLM}, against hand arithmetic from the engines' public rules.
#include <gtest/gtest.h>

#include <cmath>

#include "models/card.h"
#include "models/memory.h"
#include "tests/models/hand_model.h"
#include "tests/models/layouts.h"
#include "tests/models/shipped_cards.h"

namespace capplan::models {
namespace {

using test_cards::CardMemoryPlan;
using test_layouts::DpAttention;
using test_layouts::Tp;

TEST(KvLayout, BytesPerTokenMatchFactsTable) {
  // Per GPU at TP8 (SGLang cell sizes), BF16 / FP8.
  const struct {
    const char* name;
    int64_t bf16, fp8;
  } kTable[] = {
      {"deepseek-v3", 70272, 35136},     {"kimi-k2.6", 70272, 35136},
      {"glm-5.2", 100152, 61464},        {"glm-4.6", 47104, 23552},
      {"qwen3-235b-a22b", 48128, 24064}, {"llama-3.1-70b", 40960, 20480},
      {"llama-3.1-8b", 16384, 8192},
  };
  for (const auto& row : kTable) {
    auto card = LoadModelCard(row.name);
    ASSERT_TRUE(card.ok());
    auto bf = ComputeKvLayout(*card, Tp(8), Dtype::kBf16);
    auto f8 = ComputeKvLayout(*card, Tp(8), Dtype::kFp8E4m3);
    ASSERT_TRUE(bf.ok() && f8.ok());
    EXPECT_EQ(bf->bytes_per_token, row.bf16) << row.name;
    EXPECT_EQ(f8->bytes_per_token, row.fp8) << row.name;
  }
}

TEST(KvLayout, Glm52SplitsLatentIndexerAndScales) {
  auto card = LoadModelCard("glm-5.2");
  ASSERT_TRUE(card.ok());
  auto f8 = ComputeKvLayout(*card, Tp(8), Dtype::kFp8E4m3);
  ASSERT_TRUE(f8.ok());
  // 78 x (512 + 16 + 128) latent; 78 x (128 + 4) index keys; scales 78 x (16 + 4).
  EXPECT_EQ(f8->main_bytes_per_token, 78 * 656);
  EXPECT_EQ(f8->indexer_bytes_per_token, 78 * 132);
  EXPECT_EQ(f8->scale_bytes_per_token, 78 * 20);
  // Llama-8B at TP1 holds all 8 KV heads: 131,072 B/token (2.5).
  auto llama = LoadModelCard("llama-3.1-8b");
  ASSERT_TRUE(llama.ok());
  EXPECT_EQ(ComputeKvLayout(*llama, Tp(1), Dtype::kBf16)->bytes_per_token, 131072);
  EXPECT_EQ(ComputeKvLayout(*llama, Tp(1), Dtype::kInt4).status().code(), StatusCode::kUsage);
}

// SGLang mem_fraction_static defaults on H200 (server_args.py: PR #10975's
// itemized rule; the mid-2025 (12 + tp/2) GiB rule).
constexpr double kSglangNewerTp8 = 0.897;
constexpr double kSglangOlderTp8 = 0.886;
const DeviceMemory kH200{hand::kH200Bytes, 0};

// SGLang: KV = (reported - startup - communicators) x mfs - resident weights,
// in whole pages (page 1 by default; 64 for DSA models).
int64_t SglangTokens(double resident, int64_t bpt, double mfs, int64_t tp, int64_t page) {
  const double total =
      hand::kH200Bytes - hand::kSglangStartup - (tp > 1 ? hand::kSglangDistInit : 0);
  const double room = total * mfs - resident;
  return static_cast<int64_t>(room / (bpt * static_cast<double>(page))) * page;
}

// vLLM: KV = total x 0.9 - (resident + activation peak + non-torch), whole
// blocks (16 tokens; 64 for DSA models) less the null block.
int64_t VllmTokens(const hand::Dims& d, double resident, int64_t bpt, int64_t tp, int64_t page) {
  const double requested = std::ceil(hand::kH200Bytes * 0.9);
  const double room = requested - hand::VllmActivation(d, tp) - hand::VllmNonTorch(tp) - resident;
  return (static_cast<int64_t>(room / (bpt * static_cast<double>(page))) - 1) * page;
}

TEST(KvCapacity, EveryCardKvDtypeAndEngineAtTp8) {
  for (const hand::Dims& d : hand::AllDims()) {
    auto card = LoadModelCard(d.name);
    ASSERT_TRUE(card.ok());
    // GLM-5.2's BF16 release does not fit 8x H200; plan its FP8 release.
    const bool bf16_too_big = d.name == "glm-5.2";
    PrecisionChoice choice;
    double weights = hand::WeightsPerGpu(d, 8);
    if (bf16_too_big) {
      choice.weights = "fp8";
      weights = hand::WeightsPerGpu(d, 8, hand::kFp8, hand::kFp8, hand::kFp8, hand::kFp8);
    }
    const bool dsa = d.idx_dim > 0;
    for (bool fp8 : {false, true}) {
      choice.kv_cache = fp8 ? Dtype::kFp8E4m3 : Dtype::kBf16;
      const int64_t bpt = hand::KvBytesPerToken(d, 8, fp8);
      for (const char* engine : {"sglang", "vllm"}) {
        const bool sglang = std::string(engine) == "sglang";
        EngineMemoryOptions opt;
        opt.engine = engine;
        opt.nvls = false;  // NVLS is its own test below
        auto p = PlanMemory(*card, Tp(8), choice, opt, kH200, 16384);
        ASSERT_TRUE(p.ok()) << d.name << " " << engine << ": " << p.status().message();
        const double resident =
            weights + (sglang ? hand::SglangResidentExtras(d, 8) : hand::VllmResidentExtras(d));
        const int64_t page = dsa ? 64 : sglang ? 1 : 16;
        const int64_t tokens = sglang ? SglangTokens(resident, bpt, kSglangNewerTp8, 8, page)
                                      : VllmTokens(d, resident, bpt, 8, page);
        EXPECT_EQ(p->kv.bytes_per_token, bpt) << d.name;
        EXPECT_EQ(p->weights.bytes_per_gpu, static_cast<int64_t>(weights)) << d.name;
        EXPECT_NEAR(p->weights_resident_bytes, resident, 1) << d.name << " " << engine;
        EXPECT_EQ(p->kv_capacity_tokens, tokens) << d.name << " " << engine << " fp8=" << fp8;
        EXPECT_EQ(p->kv_pool_bytes_per_gpu, tokens * bpt) << d.name;
        const int64_t per_request = (16384 + page - 1) / page;
        EXPECT_EQ(p->max_concurrent_requests, tokens / page / per_request) << d.name;
        EXPECT_DOUBLE_EQ(p->mem_fraction, sglang ? kSglangNewerTp8 : 0.9);
        int64_t sum = 0;
        for (const MemoryTerm& t : p->terms) sum += t.bytes;
        EXPECT_EQ(sum, hand::kH200Bytes) << d.name << " " << engine << ": terms must add up";
      }
    }
  }
}

TEST(KvCapacity, OlderSglangRuleAndExplicitFraction) {
  auto card = LoadModelCard("llama-3.1-70b");
  ASSERT_TRUE(card.ok());
  const hand::Dims d = hand::AllDims()[4];
  ASSERT_EQ(d.name, "llama-3.1-70b");
  const double resident = hand::WeightsPerGpu(d, 8) + hand::SglangResidentExtras(d, 8);
  EngineMemoryOptions opt;
  opt.version = "0.5.2";
  auto p = PlanMemory(*card, Tp(8), PrecisionChoice{}, opt, kH200, 8192);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_DOUBLE_EQ(p->mem_fraction, kSglangOlderTp8);
  EXPECT_EQ(p->engine_rule_version, "0.4.6");
  EXPECT_NE(p->version_note.find("0.5.2 has no entry of its own"), std::string::npos);
  EXPECT_EQ(p->kv_capacity_tokens, SglangTokens(resident, 40960, 0.886, 8, 1));
  opt.mem_fraction = 0.8;
  p = PlanMemory(*card, Tp(8), PrecisionChoice{}, opt, kH200, 8192);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->mem_fraction_defaulted);
  EXPECT_EQ(p->kv_capacity_tokens, SglangTokens(resident, 40960, 0.8, 8, 1));
  // 0.4.5 on H200 reserved a flat 13 GiB, unrounded (PR #5893's description).
  opt.mem_fraction.reset();
  opt.version = "0.4.5.post3";
  p = PlanMemory(*card, Tp(8), PrecisionChoice{}, opt, kH200, 8192);
  ASSERT_TRUE(p.ok());
  EXPECT_DOUBLE_EQ(p->mem_fraction, (143771.0 - 13312.0) / 143771.0);
  // TP1: newer rule gives 0.907 on H200.
  auto p1 = CardMemoryPlan("llama-3.1-8b", Tp(1), EngineMemoryOptions{}, kH200, 8192);
  ASSERT_TRUE(p1.ok());
  EXPECT_DOUBLE_EQ(p1->mem_fraction, 0.907);
  EXPECT_EQ(p1->Term("communicator_bytes"), 0);
}

TEST(KvCapacity, DpAttentionSumsRankPools) {
  auto p = CardMemoryPlan("kimi-k2.6", DpAttention(8), EngineMemoryOptions{}, kH200, 16384);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_DOUBLE_EQ(p->mem_fraction, 0.769);  // server_args.py after PR #10975, TP8 + DP8
  EXPECT_EQ(p->attention_ranks, 8);
  EXPECT_EQ(p->kv_capacity_tokens, 8 * p->kv_tokens_per_rank);
  EXPECT_EQ(p->kv_tokens_per_rank,
            SglangTokens(static_cast<double>(p->weights_resident_bytes), 70272, 0.769, 8, 1));
}

TEST(KvCapacity, WeightsThatDoNotFitSayByHowMuch) {
  auto card = LoadModelCard("glm-5.2");
  ASSERT_TRUE(card.ok());
  auto p = PlanMemory(*card, Tp(8), PrecisionChoice{}, EngineMemoryOptions{}, kH200, 16384);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidConfig);
  const hand::Dims d = hand::AllDims()[2];
  const double total = hand::kH200Bytes - hand::kSglangStartup - hand::kSglangDistInit;
  const double short_gib =
      (hand::WeightsPerGpu(d, 8) + hand::SglangResidentExtras(d, 8) - total * 0.897) / hand::kGiB;
  char expect[32];
  std::snprintf(expect, sizeof expect, "%.2f GiB short", short_gib);
  EXPECT_NE(p.status().message().find(expect), std::string::npos) << p.status().message();
  auto allow = PlanMemoryAllowShortfall(*card, Tp(8), PrecisionChoice{}, EngineMemoryOptions{},
                                        kH200, 16384);
  ASSERT_TRUE(allow.ok());
  EXPECT_GT(allow->weights_shortfall_bytes, 0);
  EXPECT_EQ(allow->kv_capacity_tokens, 0);
}

TEST(KvCapacity, AFractionThatLeavesNoKvRoomSaysByHowMuch) {
  EngineMemoryOptions opt;
  opt.mem_fraction = 0.1;
  auto p = CardMemoryPlan("llama-3.1-70b", Tp(8), opt, kH200, 8192);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidConfig);
  EXPECT_NE(p.status().message().find("GiB short per GPU"), std::string::npos)
      << p.status().message();
  EXPECT_EQ(p.status().message().find('\n'), std::string::npos);
}

TEST(KvCapacity, NvlsBuffersShrinkTheVllmPool) {
  // NVLS on (NCCL's default) leaves fewer KV blocks at TP8
  // (https://github.com/vllm-project/vllm/issues/9699).
  EngineMemoryOptions opt;
  opt.engine = "vllm";
  auto on = CardMemoryPlan("llama-3.1-70b", Tp(8), opt, kH200, 8192);
  opt.nvls = false;
  auto off = CardMemoryPlan("llama-3.1-70b", Tp(8), opt, kH200, 8192);
  ASSERT_TRUE(on.ok() && off.ok());
  EXPECT_TRUE(on->nvls);
  EXPECT_LT(on->kv_capacity_tokens, off->kv_capacity_tokens);
  EXPECT_NEAR(static_cast<double>(off->kv_pool_bytes_per_gpu - on->kv_pool_bytes_per_gpu),
              5269278720.0, 40960.0 * 16);
  // Below NCCL's NVLS threshold nothing changes.
  opt.nvls = true;
  auto tp2 = CardMemoryPlan("llama-3.1-8b", Tp(2), opt, kH200, 8192);
  ASSERT_TRUE(tp2.ok());
  EXPECT_FALSE(tp2->nvls);
  EXPECT_EQ(tp2->Term("nvls_bytes"), 0);
}

TEST(KvCapacity, BadEngineInputs) {
  EngineMemoryOptions opt;
  opt.engine = "sglng";
  auto p = CardMemoryPlan("llama-3.1-8b", Tp(1), opt, kH200, 1024);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUsage);
  EXPECT_NE(p.status().message().find("did you mean 'sglang'"), std::string::npos);
  opt.engine = "sglang";
  opt.version = "0.3.0";
  EXPECT_EQ(CardMemoryPlan("llama-3.1-8b", Tp(1), opt, kH200, 1024).status().code(),
            StatusCode::kUsage);
  opt.version = "";
  opt.mem_fraction = 1.5;
  EXPECT_EQ(CardMemoryPlan("llama-3.1-8b", Tp(1), opt, kH200, 1024).status().code(),
            StatusCode::kUsage);
  opt.mem_fraction.reset();
  EXPECT_EQ(CardMemoryPlan("llama-3.1-8b", Tp(1), opt, kH200, -5).status().code(),
            StatusCode::kUsage);
  EXPECT_EQ(CardMemoryPlan("llama-3.1-8b", Tp(1), opt, kH200, 1 << 20).status().code(),
            StatusCode::kInvalidConfig);  // beyond 131,072 positions
}

}  // namespace
}  // namespace capplan::models
