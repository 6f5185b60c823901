// The layer program of models whose layers are not all alike: Qwen3-Next's
// Gated DeltaNet layers run the linear-attention ops and only its full
// layers the softmax attention; gpt-oss's sliding layers and Llama 4's
// chunked local layers run attention over the keys their window leaves.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/card.h"
#include "models/engine_profile.h"
#include "models/hybrid_pools.h"
#include "models/layer_program.h"
#include "models/ops.h"
#include "models/weight_tensors.h"
#include "tests/models/layouts.h"

namespace capplan::models {
namespace {

using test_layouts::Tp;

std::string Hf(const std::string& model) { return std::string(HF_TEST_DATA) + "/" + model; }

ShardedModel Shard(const std::string& model, int tp) {
  auto c = LoadModelCard(Hf(model));
  EXPECT_TRUE(c.ok()) << c.status().message();
  auto m = ShardModel(*c, Tp(tp), PrecisionChoice{});
  EXPECT_TRUE(m.ok()) << m.status().message();
  return *m;
}

const LayerGroup* Group(const LayerProgram& p, const std::string& name) {
  for (const LayerGroup& g : p.groups) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

// The ids of the layer ops `g`'s layers run.
std::vector<std::string> OpIds(const LayerProgram& p, const LayerGroup& g) {
  std::vector<std::string> ids;
  for (int i : g.ops) ids.push_back(p.layer_ops[i].id);
  return ids;
}

bool Has(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

const ProgramOp* LayerOp(const LayerProgram& p, const std::string& id) {
  for (const ProgramOp& op : p.layer_ops) {
    if (op.id == id) return &op;
  }
  return nullptr;
}

const Op* Find(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

TEST(HybridProgram, Qwen3NextLinearLayersRunTheDeltaRuleAndFullLayersAttention) {
  const ShardedModel m = Shard("qwen3-next-80b-a3b", 2);
  const LayerProgram& p = *m.program;
  ASSERT_EQ(p.groups.size(), 2u);
  const LayerGroup* linear = Group(p, "moe.linear_attention");
  const LayerGroup* full = Group(p, "moe.full_attention");
  ASSERT_NE(linear, nullptr);
  ASSERT_NE(full, nullptr);
  // layer_types: three linear layers, then a full one.
  EXPECT_EQ(linear->layers.size(), 36u);
  EXPECT_EQ(full->layers.size(), 12u);
  EXPECT_EQ(full->layers.front(), 3);
  EXPECT_EQ(full->layers.back(), 47);
  EXPECT_EQ(linear->layers[3], 4);
  const std::vector<std::string> lin = OpIds(p, *linear), att = OpIds(p, *full);
  for (const char* id : {"linear_attn.in_proj_qkvz", "linear_attn.in_proj_ba", "linear_attn.conv1d",
                         "linear_attn.recurrent_update", "linear_attn.chunked_delta_rule",
                         "linear_attn.norm_gate", "linear_attn.out_proj"}) {
    EXPECT_TRUE(Has(lin, id)) << id;
    EXPECT_FALSE(Has(att, id)) << id;
    EXPECT_EQ(LayerOp(p, id)->layers, 36) << id;
  }
  for (const char* id : {"attn.q_proj", "attn.k_proj", "attn.rope", "attn.kv_append",
                         "attn.decode", "attn.prefill", "attn.o_proj"}) {
    EXPECT_TRUE(Has(att, id)) << id;
    EXPECT_FALSE(Has(lin, id)) << id;
    EXPECT_EQ(LayerOp(p, id)->layers, 12) << id;
  }
  for (const char* id : {"norm.input", "attn.all_reduce", "norm.post_attention", "moe.experts"}) {
    EXPECT_TRUE(Has(lin, id) && Has(att, id)) << id;
    EXPECT_EQ(LayerOp(p, id)->layers, 48) << id;
  }
  // The KV layout counts only the 12 full layers: one layer's K and V of
  // one KV head (2 / tp) of 256, BF16.
  EXPECT_DOUBLE_EQ(LayerOp(p, "attn.decode")->kv_bytes_per_token, 2.0 * 256 * 2);
}

// The linear layers' state is as wide as the engine keeps it: fp32 state
// doubles the recurrent update's state traffic over the 16-bit one.
TEST(HybridProgram, LinearStateBytesFollowTheEngineRule) {
  HybridPoolRule rule;
  rule.ssm_state_dtype = "fp32";
  rule.conv_state_dtype = "model";
  EXPECT_EQ(LinearStateFormatOf(rule).ssm_bytes, 4);
  EXPECT_EQ(LinearStateFormatOf(rule).conv_bytes, 2);
  ShardedModel m = Shard("qwen3-next-80b-a3b", 1);
  BatchShape b;
  b.decode_context = {1000, 2000};
  std::vector<Op> ops;
  m.linear_state = LinearStateFormatOf(rule);
  BuildStepOps(m, b, &ops);
  const Op fp32 = *Find(ops, "linear_attn.recurrent_update");
  rule.ssm_state_dtype = "model";
  m.linear_state = LinearStateFormatOf(rule);
  BuildStepOps(m, b, &ops);
  const Op bf16 = *Find(ops, "linear_attn.recurrent_update");
  // State: 32 value heads x 128 x 128 per sequence, read and written.
  const double state_elems = 2.0 * 2 * 32 * 128 * 128;
  EXPECT_DOUBLE_EQ(fp32.bytes - bf16.bytes, state_elems * (4 - 2));
  EXPECT_DOUBLE_EQ(fp32.flops, bf16.flops);
}

// gpt-oss: even layers slide over the last 128 tokens, odd ones see the
// whole context. At 32K context a sliding layer reads 128 of the keys.
TEST(HybridProgram, GptOssSlidingLayersReadTheWindow) {
  const ShardedModel m = Shard("gpt-oss-120b", 1);
  const LayerProgram& p = *m.program;
  const LayerGroup* sliding = Group(p, "moe.sliding_window");
  const LayerGroup* full = Group(p, "moe.full_attention");
  ASSERT_NE(sliding, nullptr);
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(sliding->layers.size(), 18u);
  EXPECT_EQ(sliding->layers.front(), 0);
  EXPECT_EQ(full->layers.front(), 1);
  EXPECT_TRUE(Has(OpIds(p, *sliding), "attn.decode.window"));
  EXPECT_FALSE(Has(OpIds(p, *sliding), "attn.decode"));
  EXPECT_TRUE(Has(OpIds(p, *full), "attn.decode"));
  EXPECT_TRUE(Has(OpIds(p, *sliding), "attn.kv_append"));
  BatchShape b;
  b.decode_context = {32768};
  std::vector<Op> ops;
  BuildStepOps(m, b, &ops);
  const Op* whole = Find(ops, "attn.decode");
  const Op* window = Find(ops, "attn.decode.window");
  ASSERT_NE(whole, nullptr);
  ASSERT_NE(window, nullptr);
  EXPECT_EQ(whole->count, 18);
  EXPECT_EQ(window->count, 18);
  EXPECT_EQ(whole->kv_tokens, 32768);
  EXPECT_EQ(window->kv_tokens, 128);
  // Beyond the KV, both read Q and write O: 64 heads x 64, BF16.
  const double qo = 2.0 * 64 * 64 * 2, kv = 8 * 64 * 2 * 2;  // KV: 8 heads, K and V
  EXPECT_DOUBLE_EQ(whole->bytes - qo, 32768 * kv);
  EXPECT_DOUBLE_EQ((whole->bytes - qo) / (window->bytes - qo), 32768.0 / 128);
  EXPECT_DOUBLE_EQ(whole->flops / window->flops, 32768.0 / 128);
  // Prefill of 1000 fresh tokens: query p sees min(p, 128) keys.
  b.decode_context.clear();
  b.prefill = {{1000, 0}};
  BuildStepOps(m, b, &ops);
  const double pairs = 128.0 * 129 / 2 + 128.0 * (1000 - 128);
  EXPECT_DOUBLE_EQ(Find(ops, "attn.prefill.window")->flops, 4.0 * 64 * 64 * pairs);
  EXPECT_DOUBLE_EQ(Find(ops, "attn.prefill")->flops, 4.0 * 64 * 64 * 1000 * 1001 / 2);
  // After 5000 cached tokens a sliding layer reads the 127 its first query sees.
  b.prefill = {{10, 5000}};
  BuildStepOps(m, b, &ops);
  EXPECT_EQ(Find(ops, "attn.prefill.window")->kv_tokens, 127 + 10);
  EXPECT_EQ(Find(ops, "attn.prefill")->kv_tokens, 5000 + 10);
}

// Llama 4: three chunked layers (8192-token chunks), then a global one; a
// chunked query sees only the tokens of its own chunk.
TEST(HybridProgram, Llama4ChunkedLayersSeeTheirChunk) {
  const ShardedModel m = Shard("llama-4-scout-17b-16e-instruct", 8);
  const LayerProgram& p = *m.program;
  const LayerGroup* chunked = Group(p, "moe.chunked_local");
  const LayerGroup* global = Group(p, "moe.full_attention");
  ASSERT_NE(chunked, nullptr);
  ASSERT_NE(global, nullptr);
  EXPECT_EQ(chunked->layers.size(), 36u);
  EXPECT_EQ(global->layers.front(), 3);
  const ProgramOp* op = LayerOp(p, "attn.decode.window");
  ASSERT_NE(op, nullptr);
  EXPECT_TRUE(op->window_chunked);
  EXPECT_EQ(op->window, 8192);
  BatchShape b;
  b.decode_context = {10000, 8192};
  std::vector<Op> ops;
  BuildStepOps(m, b, &ops);
  // Position 10000 is the 1808th of its chunk; 8192 the last of the first.
  EXPECT_EQ(Find(ops, "attn.decode.window")->kv_tokens, 1808 + 8192);
  EXPECT_EQ(Find(ops, "attn.decode")->kv_tokens, 10000 + 8192);
  // A prefill chunk crossing a chunk boundary: positions 8151..8192 see
  // 8151..8192 keys, then 8193..8250 see 1..58.
  b.decode_context.clear();
  b.prefill = {{100, 8150}};
  BuildStepOps(m, b, &ops);
  const double pairs = (8151.0 + 8192) * 42 / 2 + 58.0 * 59 / 2;
  const int heads = 40 / 8;
  EXPECT_DOUBLE_EQ(Find(ops, "attn.prefill.window")->flops, 4.0 * heads * 128 * pairs);
  EXPECT_EQ(Find(ops, "attn.prefill.window")->kv_tokens, 8150 + 100);
  b.prefill = {{5, 8192 + 10}};
  BuildStepOps(m, b, &ops);
  EXPECT_EQ(Find(ops, "attn.prefill.window")->kv_tokens, 10 + 5);
}

// A card whose layers are all alike keeps its groups' names and ops.
TEST(HybridProgram, UniformCardsHaveNoMixerGroups) {
  auto c = LoadModelCard("qwen3-30b-a3b");
  ASSERT_TRUE(c.ok());
  auto m = ShardModel(*c, Tp(1), PrecisionChoice{});
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->program->groups.size(), 1u);
  EXPECT_EQ(m->program->groups[0].name, "moe");
  EXPECT_EQ(LayerOp(*m->program, "attn.decode.window"), nullptr);
  EXPECT_EQ(LayerOp(*m->program, "attn.decode")->layers, c->num_layers);
}

// Every op that reads weights names them: each GEMM its tensor (first) at
// the op's per-rank shape (times its fused copies), every named tensor is
// one of the card's; and each layer group's kind says what its name spells.
TEST(LayerProgramTensors, EveryWeightedOpNamesItsTensorsAtItsShape) {
  std::vector<std::string> cards = ShippedModelNames();
  for (const char* hf : {"qwen3-next-80b-a3b", "gpt-oss-120b", "llama-4-scout-17b-16e-instruct"}) {
    cards.push_back(Hf(hf));
  }
  for (const std::string& name : cards) {
    auto c = LoadModelCard(name);
    ASSERT_TRUE(c.ok()) << c.status().message();
    auto m = ShardModel(*c, Tp(1), PrecisionChoice{});
    ASSERT_TRUE(m.ok()) << name << ": " << m.status().message();
    const std::vector<WeightTensor> tensors = ListWeightTensors(m->card);
    auto local = [&](std::string_view t) -> std::optional<LocalShape> {
      for (const WeightTensor& w : tensors) {
        if (t == w.name) return ShardTensor(m->card, w, m->layout);
      }
      return std::nullopt;
    };
    const LayerProgram& p = *m->program;
    for (const auto* ops : {&p.prologue, &p.layer_ops, &p.epilogue}) {
      for (const ProgramOp& op : *ops) {
        const bool gemm = op.kind == OpKind::kGemm || op.kind == OpKind::kRouter ||
                          op.kind == OpKind::kGroupedGemm;
        if (gemm || op.kind == OpKind::kEmbedding) {
          EXPECT_FALSE(op.tensors.empty()) << name << " " << op.id;
        }
        for (std::string_view t : op.tensors) {
          EXPECT_TRUE(local(t).has_value()) << name << " " << op.id << ": no tensor " << t;
        }
        if (op.kind != OpKind::kGemm || op.tensors.empty() || !local(op.tensors[0])) continue;
        const LocalShape s = *local(op.tensors[0]);
        EXPECT_EQ(op.n, s.n * op.copies) << name << " " << op.id;
        EXPECT_EQ(op.k, s.k) << name << " " << op.id;
      }
    }
    for (const LayerGroup& g : p.groups) {
      EXPECT_EQ(g.moe, g.name.starts_with("moe")) << name << " " << g.name;
      EXPECT_EQ(g.index_fresh, g.name.find(".index_fresh") != std::string::npos) << g.name;
      EXPECT_EQ(g.mixer == LayerMixer::kLinear,
                g.name.find(".linear_attention") != std::string::npos)
          << name << " " << g.name;
    }
  }
}

}  // namespace
}  // namespace capplan::models
