// Models whose layers are not all alike: Qwen3-Next (Gated DeltaNet linear
// attention beside full attention) and Llama 4 (chunked local attention,
// interleaved MoE) import with their layer structure and hand-counted
// weights; the engines' hybrid pools (a per-sequence state pool, window-only
// KV) follow each engine version's rule, and gpt-oss's sliding layers too.
#include <gtest/gtest.h>

#include <string>

#include "models/card.h"
#include "models/engine_profile.h"
#include "models/hf_import.h"
#include "models/hybrid_pools.h"
#include "models/memory.h"
#include "models/ops.h"
#include "tests/models/hand_model.h"
#include "tests/models/layouts.h"
#include "tests/test_util/expect_text.h"

namespace capplan::models {
namespace {

using test_util::ExpectErrorContains;

using test_layouts::Tp;

std::string Hf(const std::string& model) { return std::string(HF_TEST_DATA) + "/" + model; }
const DeviceMemory kH200{hand::kH200Bytes, 0};

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Qwen3-Next in BF16 (148 GiB) does not fit one H200; its FP8 release does.
PrecisionChoice Fp8() {
  PrecisionChoice c;
  c.weights = "fp8";
  return c;
}

EngineMemoryOptions Engine(const std::string& name, const std::string& version) {
  EngineMemoryOptions o;
  o.engine = name;
  o.version = version;
  return o;
}

// Qwen3-Next's FP8 release on one H200, 16,384-token context.
Result<MemoryPlan> Qwen3NextPlan(const std::string& engine, const std::string& version) {
  CAPPLAN_ASSIGN_OR_RETURN(const ModelCard card, LoadModelCard(Hf("qwen3-next-80b-a3b")));
  return PlanMemory(card, Tp(1), Fp8(), Engine(engine, version), kH200, 16384);
}

int64_t SumOfTerms(const MemoryPlan& p) {
  int64_t sum = 0;
  for (const MemoryTerm& t : p.terms) sum += t.bytes;
  return sum;
}

TEST(HybridImport, Qwen3NextLayerStructure) {
  auto c = LoadModelCard(Hf("qwen3-next-80b-a3b"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->num_layers, 48);
  EXPECT_EQ(c->FullAttentionLayers(), 12);
  const LinearAttention& la = c->linear_attention;
  EXPECT_EQ(la.layers, 36);
  EXPECT_EQ(la.full_attention_interval, 4);
  EXPECT_EQ(la.num_key_heads, 16);
  EXPECT_EQ(la.num_value_heads, 32);
  EXPECT_EQ(la.key_head_dim, 128);
  EXPECT_EQ(la.value_head_dim, 128);
  EXPECT_EQ(la.conv_kernel, 4);
  EXPECT_TRUE(c->attention_output_gate);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_EQ(c->n_shared_experts, 1);
  EXPECT_TRUE(c->shared_expert_gate);
  EXPECT_EQ(c->NumMoeLayers(), 48);
  // KV only for the 12 full-attention layers: 2 kv heads x 256 x K,V x 2 B.
  auto kv = ComputeKvLayout(*c, Tp(1), Dtype::kBf16);
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->bytes_per_token, 12 * 2 * 256 * 2 * 2);
}

// Qwen3-Next by hand from its config: full attention (q with its gate), the
// Gated DeltaNet projections, conv, dt_bias/A_log and norm, MoE with a gated
// shared expert, norms and untied embeddings, all BF16.
TEST(HybridImport, Qwen3NextWeightsByHand) {
  auto c = LoadModelCard(Hf("qwen3-next-80b-a3b"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  const int64_t h = 2048, full = 12, lin = 36, L = 48;
  const int64_t attn = full * (16 * 256 * 2 * h + 2 * 2 * 256 * h + h * 16 * 256 + 2 * 256);
  const int64_t key = 16 * 128, value = 32 * 128, conv = 2 * key + value;
  const int64_t linear =
      lin * ((2 * key + 2 * value) * h + 2 * 32 * h + conv * 4 + 2 * 32 + 128 + h * value);
  const int64_t moe = L * (512 * 3 * 512 * h + 3 * 512 * h + h + 512 * h);
  const int64_t norms = 2 * L * h + h;
  const int64_t emb = 2 * int64_t{151936} * h;
  auto w = ComputeWeights(*c, Tp(1), PrecisionChoice{});
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->params_total, attn + linear + moe + norms + emb);
  EXPECT_EQ(w->bytes_per_gpu, 2 * (attn + linear + moe + norms + emb));
  // Qwen publishes 80B parameters (MTP layer aside).
  EXPECT_GT(w->params_total, 79'000'000'000);
  EXPECT_LT(w->params_total, 81'000'000'000);
}

TEST(HybridImport, Llama4ScoutAndMaverick) {
  auto scout = LoadModelCard(Hf("llama-4-scout-17b-16e-instruct"));
  auto mav = LoadModelCard(Hf("llama-4-maverick-17b-128e-instruct"));
  ASSERT_TRUE(scout.ok()) << scout.status().message();
  ASSERT_TRUE(mav.ok()) << mav.status().message();
  for (const ModelCard* c : {&*scout, &*mav}) {
    EXPECT_EQ(c->local_attention, LocalAttention::kChunked);
    EXPECT_EQ(c->sliding_window, 8192);
    EXPECT_EQ(c->sliding_window_layers, 36);  // every 4th layer global NoPE
    EXPECT_EQ(c->n_shared_experts, 1);
    EXPECT_FALSE(c->score_correction_bias);
  }
  EXPECT_EQ(scout->NumMoeLayers(), 48);
  EXPECT_EQ(mav->NumMoeLayers(), 24);
  EXPECT_EQ(mav->NumDenseLayers(), 24);
  EXPECT_EQ(mav->intermediate_size, 16384);
  // By hand: attention 48 x (2 x 5120 x 5120 + 2 x 1024 x 5120), norms,
  // embeddings and LM head; each MoE layer E x 3 x 8192 x 5120 experts, a
  // shared expert of the same size and an E x 5120 router; each dense layer
  // 3 x 16384 x 5120.
  const int64_t h = 5120;
  const int64_t common = 48 * (2 * h * h + 2 * 1024 * h) + (2 * 48 * h + h) + 2 * 202048 * h;
  const auto moe_layer = [&](int64_t e) { return e * 3 * 8192 * h + 3 * 8192 * h + e * h; };
  auto ws = ComputeWeights(*scout, Tp(8), PrecisionChoice{});
  auto wm = ComputeWeights(*mav, Tp(8), PrecisionChoice{});
  ASSERT_TRUE(ws.ok() && wm.ok());
  EXPECT_EQ(ws->params_total, common + 48 * moe_layer(16));
  EXPECT_EQ(wm->params_total, common + 24 * moe_layer(128) + 24 * 3 * 16384 * h);
  // Meta: 109B total with the vision encoder; 400B total.
  EXPECT_NEAR(ws->params_total / 1e9, 107.8, 0.1);
  EXPECT_NEAR(wm->params_total / 1e9, 400.7, 0.1);
}

TEST(HybridCard, LinearLayersMustMatchTheInterval) {
  auto c = LoadModelCard(Hf("qwen3-next-80b-a3b"));
  ASSERT_TRUE(c.ok());
  auto doc = ImportHfModel(Hf("qwen3-next-80b-a3b"));
  ASSERT_TRUE(doc.ok());
  std::string text = doc->card_json;
  const std::string from = "\"layers\": 36";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "\"layers\": 35");
  auto bad = ParseModelCard(text, "qwen3-next.json");
  ExpectErrorContains(bad, "/linear_attention");
}

// SGLang 0.5.x: state = rest x 0.9 / 1.9 in whole per-sequence states of
// 36 x (8192 x 3 x 2 B conv + 32 x 128 x 128 x 4 B fp32), the KV pool from
// the rest; a running request holds 3 state slots.
TEST(HybridPools, Qwen3NextSglangStatePool) {
  auto p = Qwen3NextPlan("sglang", "0.5.4");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const HybridPools& h = p->hybrid;
  EXPECT_EQ(h.linear_rule, "ratio_of_rest");
  const int64_t per_seq = 36 * (8192 * 3 * 2 + 32 * 128 * 128 * 4);
  EXPECT_EQ(h.state_bytes_per_sequence, per_seq);
  const int64_t state = p->Term("state_pool_bytes");
  EXPECT_EQ(state, h.state_slots_per_rank * per_seq);
  // state : (state + KV) = 0.9 : 1.9, to within one state and one page.
  const double share = double(state) / double(state + p->kv_pool_bytes_per_gpu);
  EXPECT_NEAR(share, 0.9 / 1.9, 0.002);
  EXPECT_EQ(p->max_concurrent_requests,
            std::min(p->kv_capacity_tokens / 16384, h.state_slots_per_rank / 3));
  EXPECT_EQ(SumOfTerms(*p), kH200.reported_bytes);
}

// vLLM: one block pool; the attention block grows to 16 x ceil(state page /
// (16 x 2048 B)) = 544 tokens so a block holds one layer's state (bf16:
// 8192 x 3 x 2 + 32 x 128 x 128 x 2 B); 12 layers a group: 1 full and 3
// linear groups, 3 state blocks per request.
TEST(HybridPools, Qwen3NextVllmStateBlocks) {
  auto p = Qwen3NextPlan("vllm", "0.19.0");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const HybridPools& h = p->hybrid;
  EXPECT_EQ(h.linear_rule, "state_block");
  const int64_t state_page = 8192 * 3 * 2 + 32 * 128 * 128 * 2;
  EXPECT_EQ(h.block_tokens, 16 * CeilDiv(state_page, 16 * 2048));
  EXPECT_EQ(h.block_tokens, 544);
  EXPECT_EQ(h.layers_per_group, 12);
  EXPECT_EQ(h.full_groups, 1);
  EXPECT_EQ(h.state_groups, 3);
  EXPECT_EQ(p->kv_pool_bytes_per_gpu, h.blocks_per_rank * 12 * 544 * 2048);
  EXPECT_EQ(p->max_concurrent_requests, h.blocks_per_rank / (CeilDiv(16384, 544) + 3));
  EXPECT_EQ(SumOfTerms(*p), kH200.reported_bytes);
}

TEST(HybridPools, EngineVersionWithoutTheModelSaysSo) {
  auto p = Qwen3NextPlan("vllm", "0.8.0");
  ExpectErrorContains(p, "linear-attention");
}

// gpt-oss-120b, 18 sliding (window 128) and 18 full layers.
TEST(HybridPools, GptOssSlidingLayersPerEngineRule) {
  auto c = LoadModelCard(Hf("gpt-oss-120b"));
  ASSERT_TRUE(c.ok());
  // vLLM 0.8: every layer per token, as before the hybrid manager.
  auto old = PlanMemory(*c, Tp(1), PrecisionChoice{}, Engine("vllm", "0.8.0"), kH200, 16384);
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_FALSE(old->hybrid.active());
  // vLLM 0.19: a full and a sliding group of 18 layers; a request holds its
  // context's blocks in the full group and 9 (127 tokens + one) in the other.
  auto v = PlanMemory(*c, Tp(1), PrecisionChoice{}, Engine("vllm", "0.19.0"), kH200, 16384);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->hybrid.local_rule, "window_blocks");
  EXPECT_EQ(v->hybrid.layers_per_group, 18);
  EXPECT_EQ(v->hybrid.block_tokens, 16);
  EXPECT_EQ(v->max_concurrent_requests, v->hybrid.blocks_per_rank / (16384 / 16 + 9));
  EXPECT_GT(v->kv_capacity_tokens, 19 * old->kv_capacity_tokens / 10);
  EXPECT_EQ(SumOfTerms(*v), kH200.reported_bytes);
  // SGLang 0.5.4: full = T x 36 / (0.8 x 18 + 18), swa = 0.8 x full; a
  // running request keeps all its tokens in both pools.
  auto s = PlanMemory(*c, Tp(1), PrecisionChoice{}, Engine("sglang", "0.5.4"), kH200, 16384);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->hybrid.local_rule, "swa_ratio");
  EXPECT_NEAR(double(s->hybrid.local_tokens_per_rank) / s->kv_capacity_tokens, 0.8, 1e-4);
  EXPECT_EQ(s->max_concurrent_requests, s->hybrid.local_tokens_per_rank / 16384);
  EXPECT_EQ(SumOfTerms(*s), kH200.reported_bytes);
}

// Decode: one recurrent update per token, 6 dk dv FLOPs per value head, and
// every sequence's state read and written once; prefill runs the chunked scan.
// The step's ops come from the layer program, as the step pricer's do.
TEST(LinearAttentionOps, DecodeAndPrefillStateTraffic) {
  auto c = LoadModelCard(Hf("qwen3-next-80b-a3b"));
  ASSERT_TRUE(c.ok());
  auto m = ShardModel(*c, Tp(2), PrecisionChoice{});
  ASSERT_TRUE(m.ok()) << m.status().message();
  m->linear_state = LinearStateFormat{4, 2};
  BatchShape b;
  b.decode_context = {100, 200, 300, 400};
  b.prefill.push_back({640, 0});
  std::vector<Op> ops;
  BuildStepOps(*m, b, &ops);
  const int64_t heads = 32 / 2, state = heads * 128 * 128 * 4;
  const Op* dec = nullptr;
  const Op* pre = nullptr;
  int linear_ops = 0;
  for (const Op& op : ops) {
    if (!op.name.starts_with("linear_attn.")) continue;
    ++linear_ops;
    EXPECT_EQ(op.count, 36) << op.name;
    if (op.name == "linear_attn.recurrent_update") dec = &op;
    if (op.name == "linear_attn.chunked_delta_rule") pre = &op;
  }
  ASSERT_NE(dec, nullptr);
  ASSERT_NE(pre, nullptr);
  EXPECT_DOUBLE_EQ(dec->flops, 6.0 * 4 * heads * 128 * 128);
  EXPECT_GE(dec->bytes, 2.0 * 4 * state);
  EXPECT_LT(dec->bytes, 2.0 * 4 * state * 1.01);
  // 640 tokens: 10 chunks of 64 (+1 per sequence), state in and out once.
  const double per_token = 4.0 * 128 * 128 + 2.0 * 64 * 256;
  EXPECT_DOUBLE_EQ(pre->flops, heads * (640 * per_token + 11.0 * 128 * 128));
  EXPECT_GE(pre->bytes, 2.0 * state);
  // in_proj_qkvz, in_proj_ba, conv1d, both scans, norm_gate, out_proj.
  EXPECT_EQ(linear_ops, 7);
  BatchShape none;
  BuildStepOps(*m, none, &ops);
  EXPECT_TRUE(ops.empty());
}

}  // namespace
}  // namespace capplan::models
