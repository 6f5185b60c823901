// Model cards: every shipped card loads, carries sources, and its parameter
// counts match hand arithmetic from the models' published configs; malformed
// cards fail with the file and JSON path.
#include "models/card.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "models/memory.h"
#include "models/weight_tensors.h"
#include "tests/test_util/expect_text.h"

namespace capplan::models {
namespace {

using test_util::ExpectContains;
using test_util::ExpectErrorContains;

TEST(ModelCard, AllElevenShippedCardsLoad) {
  const std::vector<std::string> expected = {"deepseek-v2-lite", "deepseek-v3",   "glm-4.6",
                                             "glm-5.2",          "kimi-k2.6",     "llama-3.1-70b",
                                             "llama-3.1-8b",     "llama-3.3-70b", "qwen3-235b-a22b",
                                             "qwen3-30b-a3b",    "qwen3-8b"};
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
  // Routed experts 384 x 60 x 3 x 7168 x 2048 = 1.0147e12.
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
  // Published totals: 744B (Z.ai) or ~753B (Lambda); MTP excluded here.
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

// The cards for the H100 validation rows: exact counts from each model's
// config.json dims (hand arithmetic below), and the published totals, which
// are rounded to 0.1B (so within 0.05B).
struct PublishedTotal {
  const char* name;
  int64_t params;    // hand arithmetic from config.json
  double published;  // billions, from the model card / Hub
};

TEST(ModelCard, ValidationCardsMatchConfigArithmeticAndPublishedTotals) {
  const PublishedTotal cases[] = {
      // Qwen3-8B: 36 x (q 4096x4096, k/v 1024x4096, o 4096x4096) + 36 x 3 x
      // 4096 x 12288 + 2 x 151936 x 4096 + (2x36+1) x 4096 norms + 36 x 2 x
      // 128 q/k norms = 8.19B (Qwen: 8.2B; 6.95B non-embedding).
      {"qwen3-8b",
       36LL * (2 * 4096 * 4096 + 2 * 1024 * 4096) + 36LL * 3 * 4096 * 12288 + 2LL * 151936 * 4096 +
           73LL * 4096 + 36LL * 2 * 128,
       8.2},
      // Qwen3-30B-A3B: head_dim 128 with hidden 2048 (q 4096x2048), 128
      // experts x 3 x 2048 x 768 and a 128 x 2048 router in all 48 layers
      // (Qwen: 30.5B).
      {"qwen3-30b-a3b",
       48LL * (2 * 4096 * 2048 + 2 * 512 * 2048) + 48LL * 128 * 3 * 2048 * 768 + 48LL * 128 * 2048 +
           2LL * 151936 * 2048 + 97LL * 2048 + 48LL * 2 * 128,
       30.5},
      // DeepSeek-V2-Lite: MLA without q_lora (q 3072x2048, kv_a 576x2048, kv_b
      // 4096x512, o 2048x2048), one dense layer of 10944, 26 MoE layers of 64
      // routed + 2 shared experts of 1408 and a 64 x 2048 router, kv_a norms
      // (DeepSeek: 15.7B).
      {"deepseek-v2-lite",
       27LL * (3072 * 2048 + 576 * 2048 + 4096 * 512 + 2048 * 2048) + 3LL * 2048 * 10944 +
           26LL * 66 * 3 * 2048 * 1408 + 26LL * 64 * 2048 + 2LL * 102400 * 2048 + 55LL * 2048 +
           27LL * 512,
       15.7},
      // Llama-3.3-70B: as Llama-3.1-70B (Hub: 70.6B).
      {"llama-3.3-70b",
       80LL * (2 * 8192 * 8192 + 2 * 1024 * 8192) + 80LL * 3 * 8192 * 28672 + 2LL * 128256 * 8192 +
           161LL * 8192,
       70.6},
  };
  for (const PublishedTotal& p : cases) {
    auto c = LoadModelCard(p.name);
    ASSERT_TRUE(c.ok()) << c.status().message();
    auto w = ComputeWeights(*c, ParallelLayout{}, PrecisionChoice{});
    ASSERT_TRUE(w.ok()) << p.name << ": " << w.status().message();
    EXPECT_EQ(w->params_total, p.params) << p.name;
    EXPECT_NEAR(w->params_total / 1e9, p.published, 0.05) << p.name;
    // All four ship BF16 checkpoints: 2 bytes per parameter at TP1.
    EXPECT_EQ(w->bytes_per_gpu, 2 * p.params) << p.name;
  }
}

// Finds a tensor of the card by name; nullptr if absent.
const WeightTensor* FindTensor(const std::vector<WeightTensor>& ts, std::string_view name) {
  for (const WeightTensor& t : ts) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

TEST(ModelCard, Qwen3QkNormAndHeadDimApartFromHidden) {
  auto c = LoadModelCard("qwen3-30b-a3b");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->qk_norm);
  EXPECT_NE(c->head_dim, c->hidden_size / c->num_heads);
  const std::vector<WeightTensor> ts = ListWeightTensors(*c);
  const WeightTensor* q = FindTensor(ts, "attn.q_proj");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->n, 32 * 128);  // heads x head_dim, not hidden
  EXPECT_EQ(q->k, 2048);
  for (const char* norm : {"attn.q_norm", "attn.k_norm"}) {
    const WeightTensor* t = FindTensor(ts, norm);
    ASSERT_NE(t, nullptr) << norm;
    EXPECT_EQ(t->n, 128) << norm;
    EXPECT_EQ(t->count, 48) << norm;
    EXPECT_TRUE(t->is_norm_vector) << norm;
    EXPECT_EQ(t->component, Component::kNorms) << norm;
  }
  // Llama has no q/k norms.
  auto llama = LoadModelCard("llama-3.1-8b");
  ASSERT_TRUE(llama.ok());
  EXPECT_FALSE(llama->qk_norm);
  EXPECT_EQ(FindTensor(ListWeightTensors(*llama), "attn.q_norm"), nullptr);
}

TEST(ModelCard, MlaWithoutQueryLatentHasOneQProj) {
  auto c = LoadModelCard("deepseek-v2-lite");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->q_lora_rank, 0);
  const std::vector<WeightTensor> ts = ListWeightTensors(*c);
  EXPECT_EQ(FindTensor(ts, "attn.q_a_proj"), nullptr);
  EXPECT_EQ(FindTensor(ts, "attn.q_a_layernorm"), nullptr);
  const WeightTensor* q = FindTensor(ts, "attn.q_proj");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->n, 16 * (128 + 64));
  EXPECT_EQ(q->k, 2048);
  EXPECT_EQ(q->shard, ShardKind::kAttnColumn);
  // Two shared experts of 1408 per MoE layer (26 of them).
  const WeightTensor* sh = FindTensor(ts, "moe.shared.down_proj");
  ASSERT_NE(sh, nullptr);
  EXPECT_EQ(sh->count, 2 * 26);
  EXPECT_EQ(sh->k, 1408);
  // Softmax router: no e_score_correction_bias.
  EXPECT_EQ(FindTensor(ts, "moe.gate.e_score_correction_bias"), nullptr);
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
  ExpectErrorContains(c, StatusCode::kUsage, "tiny.json");
  ExpectContains(c.status().message(), "head_dims");
}

TEST(ModelCard, MalformedJsonNamesLine) {
  auto c = ParseModelCard("{\"format\": \"capplan.model_card.v1\",\n \"name\": }", "bad.json");
  ExpectErrorContains(c, StatusCode::kUsage, "bad.json: line 2");
}

TEST(ModelCard, BadValuesNameTheJsonPath) {
  std::string text = kGoodCard;
  text.replace(text.find("\"num_layers\": 2"), 15, "\"num_layers\": -2");
  auto c = ParseModelCard(text, "tiny.json");
  ExpectErrorContains(c, "/num_layers");

  text = kGoodCard;
  text.replace(text.find("\"num_kv_heads\": 2"), 17, "\"num_kv_heads\": 3");
  c = ParseModelCard(text, "tiny.json");
  ExpectErrorContains(c, "/num_kv_heads");

  text = kGoodCard;
  text.replace(text.find("{\"dtype\": \"bf16\"}"), 17, "{\"dtype\": \"int4\"}");
  c = ParseModelCard(text, "tiny.json");
  ExpectErrorContains(c, "/checkpoint/attention/group_size");
}

TEST(ModelCard, QkNormIsGqaOnly) {
  std::string text = kGoodCard;
  const std::string head_dim = "\"head_dim\": 16";
  text.replace(text.find(head_dim), head_dim.size(), head_dim + ", \"qk_norm\": true");
  auto c = ParseModelCard(text, "tiny.json");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->qk_norm);

  const char* mla = R"({
    "format": "capplan.model_card.v1", "name": "tiny-mla", "sources": ["test"],
    "num_layers": 2, "hidden_size": 64, "vocab_size": 100, "max_position_embeddings": 1024,
    "attention": "mla", "num_heads": 4, "kv_lora_rank": 16, "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 8, "v_head_dim": 8, "qk_norm": true, "intermediate_size": 128,
    "checkpoint": {}, "quantizable": ["attention"]
  })";
  c = ParseModelCard(mla, "tiny-mla.json");
  ExpectErrorContains(c, "/qk_norm");
}

// A user's clone has no ../shared: shipped data files cite public sources
// (URLs, repository files, papers), never the workplace's facts files or
// local paths. A public file that happens to share a facts file's name
// (".../glm-4.6/h200.md") is fine: only a bare name counts.
TEST(ShippedDataFiles, CitePublicSourcesOnly) {
  const std::regex facts(
      R"((\.\./shared|/work/|\.library|(^|[^/\w-])(engine-memory|h200|kernels|models|conventions|public-measurements)\.md))");
  std::vector<std::string> files = {"hw/formats.json", "sim/pd/link_defaults.json",
                                    "kernels/gemm/sweep_shapes.json"};
  for (const char* dir : {"models/cards", "calibrate/profiles", "scenarios", "scenarios/search"}) {
    for (const auto& e : std::filesystem::directory_iterator(DataPath(dir))) {
      if (e.path().extension() == ".json") {
        files.push_back(std::string(dir) + "/" + e.path().filename().string());
      }
    }
  }
  ASSERT_GE(files.size(), 3u + 11u + 2u);
  for (const std::string& f : files) {
    auto text = ReadFile(DataPath(f));
    ASSERT_TRUE(text.ok()) << text.status().message();
    std::smatch m;
    EXPECT_FALSE(std::regex_search(*text, m, facts)) << f << " cites " << m.str();
  }
  // The guard itself: a facts-file citation is caught, a public path is not.
  EXPECT_TRUE(std::regex_search(std::string("(kernels.md 4.1)"), facts));
  EXPECT_TRUE(std::regex_search(std::string("../") + "shared/facts/x", facts));
  EXPECT_FALSE(std::regex_search(std::string("docs/performance-lab/glm-4.6/h200.md"), facts));
}

TEST(ModelCard, UnknownModelSuggestsName) {
  auto c = LoadModelCard("kimi-k2.5");
  ExpectErrorContains(c, StatusCode::kNotFound, "did you mean 'kimi-k2.6'");
}

}  // namespace
}  // namespace capplan::models
