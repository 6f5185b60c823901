// Weight bytes per GPU and layout validation, against hand arithmetic.
#include <gtest/gtest.h>

#include "models/card.h"
#include "models/memory.h"
#include "tests/models/hand_model.h"
#include "tests/models/layouts.h"
#include "tests/models/shipped_cards.h"

namespace capplan::models {
namespace {

using test_cards::CardWeights;
using test_layouts::DpAttention;
using test_layouts::Tp;

TEST(Weights, EveryCardAtTp8MatchesHandArithmetic) {
  for (const hand::Dims& d : hand::AllDims()) {
    auto card = LoadModelCard(d.name);
    ASSERT_TRUE(card.ok()) << card.status().message();
    auto w = ComputeWeights(*card, Tp(8), PrecisionChoice{});
    ASSERT_TRUE(w.ok()) << d.name << ": " << w.status().message();
    EXPECT_EQ(w->bytes_per_gpu, static_cast<int64_t>(hand::WeightsPerGpu(d, 8))) << d.name;
  }
}

TEST(Weights, RequantizedChoicesMatchHandArithmetic) {
  for (const hand::Dims& d : hand::AllDims()) {
    auto w = CardWeights(d.name, Tp(8), "fp8");
    ASSERT_TRUE(w.ok()) << w.status().message();
    // FP8 asked: every quantizable component not already FP8 becomes FP8
    // 128x128 (Kimi's INT4 experts included); embeddings stay BF16.
    EXPECT_EQ(w->bytes_per_gpu, static_cast<int64_t>(hand::WeightsPerGpu(
                                    d, 8, hand::kFp8, hand::kFp8, hand::kFp8, hand::kFp8)))
        << d.name;
    w = CardWeights(d.name, Tp(8), "bf16");
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(w->bytes_per_gpu, static_cast<int64_t>(hand::WeightsPerGpu(
                                    d, 8, hand::kBf16, hand::kBf16, hand::kBf16, hand::kBf16)))
        << d.name;
  }
}

TEST(Weights, KimiInt4KeepsShippedGroup32AndMatchesFactsSize) {
  auto w = CardWeights("kimi-k2.6", Tp(1), "int4");
  ASSERT_TRUE(w.ok());
  // Kimi's INT4 release quantizes the routed experts only (g32, as
  // shipped); attention, shared experts and the dense layer stay BF16.
  const hand::Dims d = hand::AllDims()[3];
  ASSERT_EQ(d.name, "kimi-k2.6");
  EXPECT_EQ(w->bytes_per_gpu,
            static_cast<int64_t>(hand::WeightsPerGpu(d, 1, hand::kBf16, hand::kInt4G32,
                                                     hand::kBf16, hand::kBf16)));
  // The shipped checkpoint is ~594 GB in total (decimal), and `int4` is it.
  auto shipped = CardWeights("kimi-k2.6", Tp(1));
  ASSERT_TRUE(shipped.ok());
  EXPECT_NEAR(shipped->bytes_per_gpu / 1e9, 594, 594 * 0.01);
  EXPECT_EQ(shipped->bytes_per_gpu, w->bytes_per_gpu);
  // `fp8` follows the FP8 release: every linear layer, 128x128 blocks.
  auto w8 = CardWeights("kimi-k2.6", Tp(1), "fp8");
  ASSERT_TRUE(w8.ok());
  EXPECT_EQ(w8->bytes_per_gpu,
            static_cast<int64_t>(hand::WeightsPerGpu(d, 1, hand::kFp8, hand::kFp8,
                                                     hand::kFp8, hand::kFp8)));
}

// `int4` follows each model's public W4A16 release: the routed experts
// only (GLM-5.2, DeepSeek-R1-0528), g128; the rest as the card ships it.
// Every tensor in INT4 stays an explicit per-component choice.
TEST(Weights, Int4FollowsThePublicReleaseLayout) {
  const hand::Dims ds = hand::AllDims()[0];
  const hand::Dims glm = hand::AllDims()[2];
  ASSERT_EQ(ds.name, "deepseek-v3");
  ASSERT_EQ(glm.name, "glm-5.2");
  auto w = CardWeights("deepseek-v3", Tp(8), "int4");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->bytes_per_gpu, static_cast<int64_t>(hand::WeightsPerGpu(
                                  ds, 8, hand::kFp8, hand::kInt4G128, hand::kFp8, hand::kFp8)));
  w = CardWeights("glm-5.2", Tp(8), "int4");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->bytes_per_gpu, static_cast<int64_t>(hand::WeightsPerGpu(
                                  glm, 8, hand::kBf16, hand::kInt4G128, hand::kBf16, hand::kBf16)));
  auto card = LoadModelCard("glm-5.2");
  ASSERT_TRUE(card.ok());
  EXPECT_NE(card->quantize_source.at("int4").find("canada-quant/GLM-5.2-W4A16"), std::string::npos);
  PrecisionChoice all;
  all.weights = "int4";
  for (Component c : {Component::kAttention, Component::kSharedExperts, Component::kDenseFfn}) {
    all.per_component[c] = "int4";
  }
  auto every = ComputeWeights(*card, Tp(8), all);
  ASSERT_TRUE(every.ok()) << every.status().message();
  EXPECT_EQ(every->bytes_per_gpu,
            static_cast<int64_t>(hand::WeightsPerGpu(glm, 8, hand::kInt4G128, hand::kInt4G128,
                                                     hand::kInt4G128, hand::kInt4G128)));
  EXPECT_LT(every->bytes_per_gpu, w->bytes_per_gpu);
}

TEST(Weights, PerComponentOverride) {
  auto card = LoadModelCard("deepseek-v3");
  ASSERT_TRUE(card.ok());
  PrecisionChoice c;
  c.per_component[Component::kExperts] = "int4";
  auto w = ComputeWeights(*card, Tp(8), c);
  ASSERT_TRUE(w.ok());
  const hand::Dims d = hand::AllDims()[0];
  EXPECT_EQ(w->bytes_per_gpu, static_cast<int64_t>(hand::WeightsPerGpu(
                                  d, 8, hand::kFp8, hand::kInt4G128, hand::kFp8, hand::kFp8)));
  c.per_component[Component::kExperts] = "fp4";
  auto bad = ComputeWeights(*card, Tp(8), c);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kUsage);
  EXPECT_NE(bad.status().message().find("weights.experts"), std::string::npos);
}

TEST(Weights, ExpertParallelKeepsExpertBytesPerGpu) {
  auto card = LoadModelCard("kimi-k2.6");
  ASSERT_TRUE(card.ok());
  ParallelLayout ep8 = Tp(8);
  ep8.ep = 8;
  auto a = ComputeWeights(*card, Tp(8), PrecisionChoice{});
  auto b = ComputeWeights(*card, ep8, PrecisionChoice{});
  ASSERT_TRUE(a.ok() && b.ok());
  // 48 whole experts per GPU vs 384 experts sliced 8 ways: same bytes for g32
  // groups (2048/8 = 256 is a multiple of 32).
  EXPECT_EQ(a->bytes_per_gpu, b->bytes_per_gpu);
}

TEST(Weights, DpAttentionReplicatesAttention) {
  auto w = CardWeights("kimi-k2.6", DpAttention(8));
  ASSERT_TRUE(w.ok());
  const int64_t mla = 7168LL * 1536 + 1536LL * 64 * 192 + 7168LL * 576 + 512LL * 64 * 256 +
                      64LL * 128 * 7168;
  for (const auto& c : w->components) {
    if (c.component == Component::kAttention) {
      EXPECT_EQ(c.bytes_per_gpu, 61 * mla * 2);
    }
  }
}

TEST(Layout, InvalidLayoutsExplainThemselves) {
  auto llama = LoadModelCard("llama-3.1-70b");
  ASSERT_TRUE(llama.ok());
  auto st = ValidateLayout(*llama, Tp(3));
  EXPECT_EQ(st.code(), StatusCode::kInvalidConfig);
  EXPECT_NE(st.message().find("num_heads 64"), std::string::npos) << st.message();

  ParallelLayout ep = Tp(8);
  ep.ep = 2;
  st = ValidateLayout(*llama, ep);
  EXPECT_EQ(st.code(), StatusCode::kInvalidConfig);
  EXPECT_NE(st.message().find("MoE"), std::string::npos) << st.message();

  auto tiny = ParseModelCard(R"({
    "format": "capplan.model_card.v1", "name": "tiny-moe", "sources": ["test"],
    "num_layers": 2, "hidden_size": 64, "vocab_size": 100, "max_position_embeddings": 1024,
    "attention": "gqa", "num_heads": 4, "num_kv_heads": 4, "head_dim": 16,
    "n_routed_experts": 2, "experts_per_token": 2, "moe_intermediate_size": 32,
    "checkpoint": {}, "quantizable": ["experts"]})", "tiny.json");
  ASSERT_TRUE(tiny.ok()) << tiny.status().message();
  ParallelLayout ep4 = Tp(4);
  ep4.ep = 4;
  st = ValidateLayout(*tiny, ep4);
  EXPECT_EQ(st.code(), StatusCode::kInvalidConfig);
  // Whether the experts divide is the engine's rule (CheckExpertSplit); a
  // rank without a single expert is refused here.
  EXPECT_NE(st.message().find("--ep 4 is more than the 2 experts to place"), std::string::npos)
      << st.message();

  ParallelLayout gpus = Tp(8);
  gpus.gpus = 4;
  EXPECT_EQ(ValidateLayout(*llama, gpus).code(), StatusCode::kInvalidConfig);
  EXPECT_EQ(ValidateLayout(*llama, Tp(-1)).code(), StatusCode::kUsage);
}

// The bound is the one the scenario parser applies, and its message names
// the degree as both the --tp flag and the scenario's `tp` field do.
TEST(Layout, DegreeAboveTheBoundIsAUsageErrorForEveryCaller) {
  auto llama = LoadModelCard("llama-3.1-70b");
  ASSERT_TRUE(llama.ok());
  const Status st = ValidateLayout(*llama, Tp(kMaxParallelDegree + 1));
  EXPECT_EQ(st.code(), StatusCode::kUsage);
  EXPECT_EQ(st.message(), "tp must be in [1, " + std::to_string(kMaxParallelDegree) + "], got " +
                              std::to_string(kMaxParallelDegree + 1));
}

}  // namespace
}  // namespace capplan::models
