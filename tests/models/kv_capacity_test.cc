// KV bytes per token and KV capacity for every card x {BF16, FP8} KV x
// {SGLang, vLLM}, against hand arithmetic from the engines' KV-pool rules
// (tests/models/hand_model.h).
#include <cmath>

#include <gtest/gtest.h>

#include "models/card.h"
#include "models/memory.h"
#include "tests/models/hand_model.h"

namespace capplan {
namespace {

ParallelLayout Tp(int tp) {
  ParallelLayout l;
  l.gpus = tp;
  l.tp = tp;
  return l;
}

TEST(KvLayout, BytesPerTokenMatchFactsTable) {
  // Per GPU at TP8 (SGLang's cell_size with the model configs), BF16 / FP8.
  const struct {
    const char* name;
    int64_t bf16, fp8;
  } kTable[] = {
      {"deepseek-v3", 70272, 35136},    {"kimi-k2.6", 70272, 35136},
      {"glm-5.2", 100152, 61464},       {"glm-4.6", 47104, 23552},
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

// SGLang mem_fraction_static defaults on H200 (sgl-project/sglang
// python/sglang/srt/server_args.py; older and newer reserve formulas).
constexpr double kSglangNewerTp8 = 0.897;
constexpr double kSglangOlderTp8 = 0.886;

int64_t SglangTokens(double weights, int64_t bpt, double mfs) {
  const double room = hand::kH200Bytes * mfs - weights;
  return static_cast<int64_t>(room / (bpt * 64.0)) * 64;
}

int64_t VllmTokens(const hand::Dims& d, double weights, int64_t bpt) {
  const double requested = std::ceil(hand::kH200Bytes * 0.9);
  const double room = requested - hand::VllmActivation(d, 8) - weights;
  return (static_cast<int64_t>(room / (bpt * 64.0)) - 1) * 64;  // minus the null block
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
    for (bool fp8 : {false, true}) {
      choice.kv_cache = fp8 ? Dtype::kFp8E4m3 : Dtype::kBf16;
      const int64_t bpt = hand::KvBytesPerToken(d, 8, fp8);
      for (const char* engine : {"sglang", "vllm"}) {
        EngineMemoryOptions opt;
        opt.engine = engine;
        auto p = PlanMemory(*card, Tp(8), choice, opt, hand::kH200Bytes, 16384);
        ASSERT_TRUE(p.ok()) << d.name << " " << engine << ": " << p.status().message();
        const int64_t tokens = std::string(engine) == "sglang"
                                   ? SglangTokens(weights, bpt, kSglangNewerTp8)
                                   : VllmTokens(d, weights, bpt);
        EXPECT_EQ(p->kv.bytes_per_token, bpt) << d.name;
        EXPECT_EQ(p->weights.bytes_per_gpu, static_cast<int64_t>(weights)) << d.name;
        EXPECT_EQ(p->kv_capacity_tokens, tokens) << d.name << " " << engine << " fp8=" << fp8;
        EXPECT_EQ(p->kv_pool_bytes_per_gpu, tokens * bpt) << d.name;
        EXPECT_EQ(p->max_concurrent_requests, tokens / 64 / (16384 / 64)) << d.name;
        EXPECT_DOUBLE_EQ(p->mem_fraction,
                         std::string(engine) == "sglang" ? kSglangNewerTp8 : 0.9);
      }
    }
  }
}

TEST(KvCapacity, OlderSglangRuleAndExplicitFraction) {
  auto card = LoadModelCard("llama-3.1-70b");
  ASSERT_TRUE(card.ok());
  const hand::Dims d = hand::AllDims()[4];
  ASSERT_EQ(d.name, "llama-3.1-70b");
  EngineMemoryOptions opt;
  opt.version = "0.5.2";
  auto p = PlanMemory(*card, Tp(8), PrecisionChoice{}, opt, hand::kH200Bytes, 8192);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_DOUBLE_EQ(p->mem_fraction, kSglangOlderTp8);
  EXPECT_EQ(p->kv_capacity_tokens, SglangTokens(hand::WeightsPerGpu(d, 8), 40960, 0.886));
  opt.mem_fraction = 0.8;
  p = PlanMemory(*card, Tp(8), PrecisionChoice{}, opt, hand::kH200Bytes, 8192);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->mem_fraction_defaulted);
  EXPECT_EQ(p->kv_capacity_tokens, SglangTokens(hand::WeightsPerGpu(d, 8), 40960, 0.8));
  // TP1: newer rule gives 0.907 on H200 (2.2).
  auto small = LoadModelCard("llama-3.1-8b");
  ASSERT_TRUE(small.ok());
  auto p1 = PlanMemory(*small, Tp(1), PrecisionChoice{}, EngineMemoryOptions{}, hand::kH200Bytes,
                       8192);
  ASSERT_TRUE(p1.ok());
  EXPECT_DOUBLE_EQ(p1->mem_fraction, 0.907);
}

TEST(KvCapacity, DpAttentionSumsRankPools) {
  auto card = LoadModelCard("kimi-k2.6");
  ASSERT_TRUE(card.ok());
  ParallelLayout l = Tp(8);
  l.dp_attention = true;
  l.dp = 8;
  auto p = PlanMemory(*card, l, PrecisionChoice{}, EngineMemoryOptions{}, hand::kH200Bytes, 16384);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_DOUBLE_EQ(p->mem_fraction, 0.769);  // SGLang server_args.py, TP8 + DP8
  EXPECT_EQ(p->attention_ranks, 8);
  EXPECT_EQ(p->kv_capacity_tokens, 8 * p->kv_tokens_per_rank);
  EXPECT_EQ(p->kv_tokens_per_rank,
            SglangTokens(static_cast<double>(p->weights.bytes_per_gpu), 70272, 0.769));
}

TEST(KvCapacity, WeightsThatDoNotFitSayByHowMuch) {
  auto card = LoadModelCard("glm-5.2");
  ASSERT_TRUE(card.ok());
  auto p = PlanMemory(*card, Tp(8), PrecisionChoice{}, EngineMemoryOptions{}, hand::kH200Bytes,
                      16384);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidConfig);
  const hand::Dims d = hand::AllDims()[2];
  const double short_gib =
      (hand::WeightsPerGpu(d, 8) - hand::kH200Bytes * 0.897) / (1024.0 * 1024 * 1024);
  char expect[32];
  std::snprintf(expect, sizeof expect, "%.2f GiB short", short_gib);
  EXPECT_NE(p.status().message().find(expect), std::string::npos) << p.status().message();
  auto allow = PlanMemoryAllowShortfall(*card, Tp(8), PrecisionChoice{}, EngineMemoryOptions{},
                                        hand::kH200Bytes, 16384);
  ASSERT_TRUE(allow.ok());
  EXPECT_GT(allow->weights_shortfall_bytes, 0);
  EXPECT_EQ(allow->kv_capacity_tokens, 0);
}

TEST(KvCapacity, BadEngineInputs) {
  auto card = LoadModelCard("llama-3.1-8b");
  ASSERT_TRUE(card.ok());
  EngineMemoryOptions opt;
  opt.engine = "sglng";
  auto p = PlanMemory(*card, Tp(1), PrecisionChoice{}, opt, hand::kH200Bytes, 1024);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUsage);
  EXPECT_NE(p.status().message().find("did you mean 'sglang'"), std::string::npos);
  opt.engine = "sglang";
  opt.version = "0.3.0";
  EXPECT_EQ(PlanMemory(*card, Tp(1), PrecisionChoice{}, opt, hand::kH200Bytes, 1024)
                .status().code(), StatusCode::kUsage);
  opt.version = "";
  opt.mem_fraction = 1.5;
  EXPECT_EQ(PlanMemory(*card, Tp(1), PrecisionChoice{}, opt, hand::kH200Bytes, 1024)
                .status().code(), StatusCode::kUsage);
  opt.mem_fraction.reset();
  EXPECT_EQ(PlanMemory(*card, Tp(1), PrecisionChoice{}, opt, hand::kH200Bytes, -5)
                .status().code(), StatusCode::kUsage);
  EXPECT_EQ(PlanMemory(*card, Tp(1), PrecisionChoice{}, opt, hand::kH200Bytes, 1 << 20)
                .status().code(), StatusCode::kInvalidConfig);  // beyond 131,072 positions
}

}  // namespace
}  // namespace capplan
