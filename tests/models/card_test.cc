// Model cards: every shipped card loads, carries sources, and its parameter
// counts match hand arithmetic from the models' published configs; malformed
// cards fail with the file and JSON path.
#include <string>

#include <gtest/gtest.h>

#include "models/card.h"
#include "models/memory.h"

namespace capplan {
namespace {

TEST(ModelCard, AllSevenShippedCardsLoad) {
  const std::vector<std::string> expected = {"deepseek-v3",     "glm-4.6",       "glm-5.2",
                                             "kimi-k2.6",       "llama-3.1-70b", "llama-3.1-8b",
                                             "qwen3-235b-a22b"};
  EXPECT_EQ(ShippedModelNames(), expected);
  for (const std::string& name : expected) {
    auto card = LoadModelCard(name);
    ASSERT_TRUE(card.ok()) << card.status().message();
    EXPECT_EQ(card->name, name);
    EXPECT_FALSE(card->sources.empty());
  }
}

TEST(ModelCard, KimiCheckpointPrecisionIsExact) {
  auto c = LoadModelCard("kimi-k2.6");
  ASSERT_TRUE(c.ok());
  const WeightFormat& e = c->checkpoint.at(Component::kExperts);
  EXPECT_EQ(e.dtype, Dtype::kInt4);
  EXPECT_EQ(e.group_size, 32);
  EXPECT_TRUE(e.symmetric);
  EXPECT_EQ(e.scale_dtype, Dtype::kBf16);
  for (Component k : {Component::kAttention, Component::kSharedExperts, Component::kDenseFfn,
                      Component::kEmbeddings}) {
    EXPECT_EQ(c->checkpoint.at(k).dtype, Dtype::kBf16) << ComponentName(k);
  }
  auto d = LoadModelCard("deepseek-v3");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->checkpoint.at(Component::kExperts).dtype, Dtype::kFp8E4m3);
  EXPECT_EQ(d->checkpoint.at(Component::kExperts).block_rows, 128);
  EXPECT_EQ(d->checkpoint.at(Component::kEmbeddings).dtype, Dtype::kBf16);
}

int64_t ParamsOf(const WeightBreakdown& w, Component c) {
  for (const auto& x : w.components) {
    if (x.component == c) return x.params_total;
  }
  return -1;
}

TEST(ModelCard, KimiParameterCountsMatchFacts) {
  auto c = LoadModelCard("kimi-k2.6");
  ASSERT_TRUE(c.ok());
  auto w = ComputeWeights(*c, ParallelLayout{}, PrecisionChoice{});
  ASSERT_TRUE(w.ok()) << w.status().message();
  // Kimi K2.6 config: routed experts 384 x 60 x 3 x 7168 x 2048 = 1.0147e12.
  EXPECT_EQ(ParamsOf(*w, Component::kExperts), 384LL * 60 * 3 * 7168 * 2048);
  // Shared experts 60 x 3 x 7168 x 2048 = 2.64B; dense layer 3 x 7168 x 18432.
  EXPECT_EQ(ParamsOf(*w, Component::kSharedExperts), 60LL * 3 * 7168 * 2048);
  EXPECT_EQ(ParamsOf(*w, Component::kDenseFfn), 3LL * 7168 * 18432);
  // Embeddings + head: 2 x 163840 x 7168 = 2.35B.
  EXPECT_EQ(ParamsOf(*w, Component::kEmbeddings), 2LL * 163840 * 7168);
  // MLA per layer: q_a 7168x1536, q_b 1536x64x192, kv_a 7168x576,
  // kv_b 512x64x256, o 64x128x7168; x61 = 6.17B.
  const int64_t mla = 7168LL * 1536 + 1536LL * 64 * 192 + 7168LL * 576 + 512LL * 64 * 256 +
                      64LL * 128 * 7168;
  EXPECT_EQ(ParamsOf(*w, Component::kAttention), 61 * mla);
  EXPECT_NEAR(ParamsOf(*w, Component::kAttention) / 1e9, 6.17, 0.01);
}

TEST(ModelCard, Glm52TotalParamsNear744B) {
  auto c = LoadModelCard("glm-5.2");
  ASSERT_TRUE(c.ok());
  auto w = ComputeWeights(*c, ParallelLayout{}, PrecisionChoice{});
  ASSERT_TRUE(w.ok());
  // 744B (Z.ai, per https://phala.com/posts/glm-5-2-1m-context-8xh200) or
  // ~753B (https://lambda.ai/inference-models/zai-org/glm-5.2); MTP excluded here.
  EXPECT_GT(w->params_total, 735e9);
  EXPECT_LT(w->params_total, 755e9);
  // Routed experts: 256 x 75 MoE layers x 3 x 6144 x 2048.
  EXPECT_EQ(ParamsOf(*w, Component::kExperts), 256LL * 75 * 3 * 6144 * 2048);
}

TEST(ModelCard, DenseLlamaParams) {
  auto c = LoadModelCard("llama-3.1-8b");
  ASSERT_TRUE(c.ok());
  auto w = ComputeWeights(*c, ParallelLayout{}, PrecisionChoice{});
  ASSERT_TRUE(w.ok());
  // 32 x (4096x4096x2 + 4096x1024x2) attention, 32 x 3 x 4096 x 14336 FFN,
  // 2 x 128256 x 4096 embeddings, (2 x 32 + 1) x 4096 norms = 8.03B.
  const int64_t expected = 32LL * (2 * 4096 * 4096 + 2 * 4096 * 1024) + 32LL * 3 * 4096 * 14336 +
                           2LL * 128256 * 4096 + 65LL * 4096;
  EXPECT_EQ(w->params_total, expected);
}

const char* kGoodCard = R"({
  "format": "capplan.model_card.v1", "name": "tiny", "sources": ["test"],
  "num_layers": 2, "hidden_size": 64, "vocab_size": 100, "max_position_embeddings": 1024,
  "attention": "gqa", "num_heads": 4, "num_kv_heads": 2, "head_dim": 16,
  "intermediate_size": 128,
  "checkpoint": {"attention": {"dtype": "bf16"}}, "quantizable": ["attention", "dense_ffn"]
})";

TEST(ModelCard, ParsesAMinimalCard) {
  auto c = ParseModelCard(kGoodCard, "tiny.json");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->num_kv_heads, 2);
}

TEST(ModelCard, UnknownFieldNamesFileAndPath) {
  std::string text = kGoodCard;
  text.replace(text.find("\"head_dim\""), 10, "\"head_dims\"");
  auto c = ParseModelCard(text, "tiny.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUsage);
  EXPECT_NE(c.status().message().find("tiny.json"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("head_dims"), std::string::npos);
}

TEST(ModelCard, MalformedJsonNamesLine) {
  auto c = ParseModelCard("{\"format\": \"capplan.model_card.v1\",\n \"name\": }", "bad.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUsage);
  EXPECT_NE(c.status().message().find("bad.json: line 2"), std::string::npos)
      << c.status().message();
}

TEST(ModelCard, BadValuesNameTheJsonPath) {
  std::string text = kGoodCard;
  text.replace(text.find("\"num_layers\": 2"), 15, "\"num_layers\": -2");
  auto c = ParseModelCard(text, "tiny.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/num_layers"), std::string::npos) << c.status().message();

  text = kGoodCard;
  text.replace(text.find("\"num_kv_heads\": 2"), 17, "\"num_kv_heads\": 3");
  c = ParseModelCard(text, "tiny.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/num_kv_heads"), std::string::npos) << c.status().message();

  text = kGoodCard;
  text.replace(text.find("{\"dtype\": \"bf16\"}"), 17, "{\"dtype\": \"int4\"}");
  c = ParseModelCard(text, "tiny.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/checkpoint/attention/group_size"), std::string::npos)
      << c.status().message();
}

TEST(ModelCard, UnknownModelSuggestsName) {
  auto c = LoadModelCard("kimi-k2.5");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("did you mean 'kimi-k2.6'"), std::string::npos)
      << c.status().message();
}

}  // namespace
}  // namespace capplan
