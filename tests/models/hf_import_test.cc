// Importing the shipped Hugging Face configs (tests/data/hf/<model>) gives
// the hand-written cards' weight bytes, KV bytes per token and layer
// structure; gpt-oss's MXFP4 experts weigh what hand arithmetic says; an
// index's total_size matches the imported bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "models/card.h"
#include "models/hf_import.h"
#include "models/memory.h"
#include "tests/test_util/shell.h"
#include "tests/test_util/temp_dir.h"
#include "tests/models/layouts.h"

namespace capplan::models {
namespace {

std::string Hf(const std::string& model) { return std::string(HF_TEST_DATA) + "/" + model; }

using test_layouts::Tp;

const char* kCarded[] = {"deepseek-v2-lite", "deepseek-v3",   "glm-4.6",      "glm-5.2",
                         "kimi-k2.6",        "llama-3.1-8b",  "llama-3.1-70b", "llama-3.3-70b",
                         "qwen3-8b",         "qwen3-30b-a3b", "qwen3-235b-a22b"};

// Bytes the imported card holds beyond the hand card: GLM-4.5's q/k/v
// biases, which the hand card leaves out (its notes say so).
int64_t ExtraBiasBytes(const ModelCard& c, int tp) {
  if (!c.qkv_bias) return 0;
  const int64_t kv_heads = std::max(1, c.num_kv_heads / tp);
  return int64_t{c.num_layers} * (c.num_heads / tp + 2 * kv_heads) * c.head_dim * 2;
}

void ExpectSameStructure(const ModelCard& hand, const ModelCard& imp) {
  EXPECT_EQ(imp.num_layers, hand.num_layers);
  EXPECT_EQ(imp.hidden_size, hand.hidden_size);
  EXPECT_EQ(imp.vocab_size, hand.vocab_size);
  EXPECT_EQ(imp.tie_word_embeddings, hand.tie_word_embeddings);
  EXPECT_EQ(imp.max_position_embeddings, hand.max_position_embeddings);
  EXPECT_EQ(imp.mtp_layers, hand.mtp_layers);
  EXPECT_EQ(imp.attention, hand.attention);
  EXPECT_EQ(imp.num_heads, hand.num_heads);
  if (hand.attention == AttentionKind::kGqa) {
    EXPECT_EQ(imp.num_kv_heads, hand.num_kv_heads);
    EXPECT_EQ(imp.head_dim, hand.head_dim);
  }
  EXPECT_EQ(imp.qk_norm, hand.qk_norm);
  EXPECT_EQ(imp.q_lora_rank, hand.q_lora_rank);
  EXPECT_EQ(imp.kv_lora_rank, hand.kv_lora_rank);
  EXPECT_EQ(imp.qk_nope_head_dim, hand.qk_nope_head_dim);
  EXPECT_EQ(imp.qk_rope_head_dim, hand.qk_rope_head_dim);
  EXPECT_EQ(imp.v_head_dim, hand.v_head_dim);
  EXPECT_EQ(imp.index_n_heads, hand.index_n_heads);
  EXPECT_EQ(imp.index_head_dim, hand.index_head_dim);
  EXPECT_EQ(imp.index_topk, hand.index_topk);
  EXPECT_EQ(imp.intermediate_size, hand.intermediate_size);
  EXPECT_EQ(imp.first_k_dense, hand.first_k_dense);
  EXPECT_EQ(imp.n_routed_experts, hand.n_routed_experts);
  EXPECT_EQ(imp.experts_per_token, hand.experts_per_token);
  EXPECT_EQ(imp.n_shared_experts, hand.n_shared_experts);
  EXPECT_EQ(imp.moe_intermediate_size, hand.moe_intermediate_size);
  EXPECT_DOUBLE_EQ(imp.routed_scaling_factor, hand.routed_scaling_factor);
  EXPECT_EQ(imp.scoring_func, hand.scoring_func);
  for (const auto& [comp, f] : hand.checkpoint) {
    const WeightFormat& g = imp.checkpoint.at(comp);
    EXPECT_EQ(g.dtype, f.dtype) << ComponentName(comp);
    EXPECT_EQ(g.block_rows, f.block_rows) << ComponentName(comp);
    EXPECT_EQ(g.block_cols, f.block_cols) << ComponentName(comp);
    EXPECT_EQ(g.group_size, f.group_size) << ComponentName(comp);
    EXPECT_EQ(g.symmetric, f.symmetric) << ComponentName(comp);
    EXPECT_EQ(g.scale_dtype, f.scale_dtype) << ComponentName(comp);
  }
}

TEST(HfImport, EveryCardedModelReproducesItsHandCard) {
  for (const char* name : kCarded) {
    SCOPED_TRACE(name);
    auto hand = LoadModelCard(name);
    auto imp = LoadModelCard(Hf(name));
    ASSERT_TRUE(hand.ok()) << hand.status().message();
    ASSERT_TRUE(imp.ok()) << imp.status().message();
    ExpectSameStructure(*hand, *imp);
    for (int tp : {1, 8}) {
      if (!ValidateLayout(*hand, Tp(tp)).ok()) continue;
      auto wh = ComputeWeights(*hand, Tp(tp), PrecisionChoice{});
      auto wi = ComputeWeights(*imp, Tp(tp), PrecisionChoice{});
      ASSERT_TRUE(wh.ok() && wi.ok());
      EXPECT_EQ(wi->bytes_per_gpu, wh->bytes_per_gpu + ExtraBiasBytes(*imp, tp)) << "tp " << tp;
      for (Dtype kv : {Dtype::kBf16, Dtype::kFp8E4m3}) {
        auto kh = ComputeKvLayout(*hand, Tp(tp), kv);
        auto ki = ComputeKvLayout(*imp, Tp(tp), kv);
        ASSERT_TRUE(kh.ok() && ki.ok());
        EXPECT_EQ(ki->bytes_per_token, kh->bytes_per_token) << "tp " << tp;
      }
    }
  }
}

TEST(HfImport, GlmBiasesAreTheOnlyDifferenceAndAreSmall) {
  auto imp = LoadModelCard(Hf("glm-4.6"));
  ASSERT_TRUE(imp.ok()) << imp.status().message();
  EXPECT_TRUE(imp->qkv_bias);
  EXPECT_FALSE(imp->o_bias);
  // 92 layers x (96 + 2 x 8) heads x 128 x 2 B at TP1.
  EXPECT_EQ(ExtraBiasBytes(*imp, 1), 92LL * 112 * 128 * 2);
}

TEST(HfImport, Glm52LacksOnlyTheIndexShareThatNoConfigKeyCarries) {
  auto hand = LoadModelCard("glm-5.2");
  auto imp = LoadModelCard(Hf("glm-5.2"));
  ASSERT_TRUE(hand.ok() && imp.ok());
  EXPECT_EQ(hand->index_share_every, 4);
  EXPECT_EQ(imp->index_share_every, 0);
}

TEST(HfImport, CardCarriesTheSourceOfEveryValue) {
  auto imp = ImportHfModel(Hf("deepseek-v3"));
  ASSERT_TRUE(imp.ok()) << imp.status().message();
  const auto doc = nlohmann::json::parse(imp->card_json);
  const auto& src = doc.at("value_sources");
  EXPECT_EQ(src.at("num_layers"), "config.json num_hidden_layers");
  EXPECT_EQ(src.at("first_k_dense"), "config.json first_k_dense_replace");
  EXPECT_NE(src.at("checkpoint.experts").get<std::string>().find("weight_block_size"),
            std::string::npos);
  for (const auto& [key, value] : doc.items()) {
    if (key == "format" || key == "name" || key == "display_name" || key == "sources" ||
        key == "notes" || key == "value_sources" || key == "checkpoint" || key == "quantizable") {
      continue;
    }
    EXPECT_TRUE(src.contains(key)) << key << " has no source";
  }
  EXPECT_EQ(imp->quant_method, "fp8");
  EXPECT_EQ(doc["checkpoint"]["router"]["dtype"], "bf16");
  EXPECT_EQ(doc["checkpoint"]["embeddings"]["dtype"], "bf16");
}

TEST(HfImport, GptOss120bMatchesHandArithmetic) {
  if (!ParseDtype("mxfp4").ok()) GTEST_SKIP() << "mxfp4 is not a known format in this build";
  auto card = LoadModelCard(Hf("gpt-oss-120b"));
  ASSERT_TRUE(card.ok()) << card.status().message();
  EXPECT_TRUE(card->attention_sinks);
  EXPECT_TRUE(card->qkv_bias && card->o_bias);
  EXPECT_TRUE(card->moe_bias);
  EXPECT_EQ(card->sliding_window, 128);
  EXPECT_EQ(card->sliding_window_layers, 18);
  EXPECT_EQ(DtypeName(card->checkpoint.at(Component::kExperts).dtype), std::string("mxfp4"));
  EXPECT_EQ(card->checkpoint.at(Component::kAttention).dtype, Dtype::kBf16);
  auto w = ComputeWeights(*card, Tp(1), PrecisionChoice{});
  ASSERT_TRUE(w.ok()) << w.status().message();
  // 36 layers x 128 experts x (2 x 2880 + 2880) x 2880 weights: half a byte
  // each plus one E8M0 byte per 32; biases (2 x 2880 + 2880 per expert) BF16.
  const int64_t weights = 36LL * 128 * 3 * 2880 * 2880;
  const int64_t biases = 36LL * 128 * 3 * 2880;
  int64_t experts = 0;
  for (const ComponentWeights& c : w->components) {
    if (c.component == Component::kExperts) experts = c.bytes_per_gpu + c.scale_bytes_per_gpu;
  }
  EXPECT_EQ(experts, weights / 2 + weights / 32 + biases * 2);
  // Attention: q/o 64 x 64 and k/v 8 x 64 by 2880, BF16; its biases and
  // sinks count as 1-D weights (norms).
  auto kv = ComputeKvLayout(*card, Tp(1), Dtype::kBf16);
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->bytes_per_token, 36LL * 2 * 8 * 64 * 2);
}

TEST(HfImport, IndexTotalSizeMatchesTheImportedBytes) {
  // The published Llama-3.1-8B index: metadata.total_size 16,060,522,496
  // (the Hugging Face docs' model.safetensors.index.json example and public
  // copies of the index). Tensor names as the checkpoint spells them.
  const std::string dir = test_util::TestTempPath("llama-3.1-8b");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(Hf("llama-3.1-8b") + "/config.json", dir + "/config.json");
  nlohmann::json map = nlohmann::json::object();
  map["model.embed_tokens.weight"] = "a";
  map["lm_head.weight"] = "a";
  map["model.norm.weight"] = "a";
  for (int l = 0; l < 32; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (const char* t : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                          "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj",
                          "input_layernorm", "post_attention_layernorm"}) {
      map[p + t + ".weight"] = "a";
    }
  }
  std::ofstream(dir + "/model.safetensors.index.json")
      << nlohmann::json{{"metadata", {{"total_size", 16060522496LL}}}, {"weight_map", map}}.dump();
  auto imp = ImportHfModel(dir);
  ASSERT_TRUE(imp.ok()) << imp.status().message();
  ASSERT_TRUE(imp->index_total_size.has_value());
  EXPECT_EQ(imp->index_tensors, 291);
  auto card = ParseModelCard(imp->card_json, "imported");
  ASSERT_TRUE(card.ok());
  auto s = SummarizeCard(*card);
  ASSERT_TRUE(s.ok());
  // BF16 tensors carry no scales: the bytes agree exactly.
  EXPECT_EQ(s->weight_bytes + s->mtp_weight_bytes, *imp->index_total_size);
}

}  // namespace
}  // namespace capplan::models
