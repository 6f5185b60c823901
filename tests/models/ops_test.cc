// Step operator lists on tiny batches, FLOPs and bytes derived by hand.
#include <gtest/gtest.h>

#include "models/card.h"
#include "models/engine_profile.h"
#include "models/ops.h"
#include "tests/models/layouts.h"

namespace capplan::models {
namespace {

ShardedModel Shard(const std::string& name, int tp, const std::string& weights = "default") {
  auto card = LoadModelCard(name);
  EXPECT_TRUE(card.ok());
  ParallelLayout l;
  l.gpus = l.tp = tp;
  PrecisionChoice c;
  c.weights = weights;
  auto m = ShardModel(*card, l, c);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return *m;
}

const Op* Find(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

// The op named `name`; a missing one fails the test and reads as a default
// Op, so the checks after it fail too instead of dereferencing null.
const Op& Get(const std::vector<Op>& ops, const std::string& name) {
  if (const Op* op = Find(ops, name)) return *op;
  ADD_FAILURE() << "no op " << name;
  static const Op kMissing;
  return kMissing;
}

// The ops of one step of `m` over `b`.
std::vector<Op> StepOps(const ShardedModel& m, const BatchShape& b) {
  std::vector<Op> ops;
  BuildStepOps(m, b, &ops);
  return ops;
}

// The ops of one decode step of `m`, a request per context length.
std::vector<Op> DecodeOps(const ShardedModel& m, std::vector<int64_t> contexts) {
  BatchShape b;
  b.decode_context = std::move(contexts);
  return StepOps(m, b);
}

TEST(Ops, LlamaDecodeOneRequestTp1) {
  const std::vector<Op> ops = DecodeOps(Shard("llama-3.1-8b", 1), {100});
  const Op& q = Get(ops, "attn.q_proj");
  EXPECT_EQ(q.count, 32);
  EXPECT_EQ(q.m, 1);
  EXPECT_DOUBLE_EQ(q.flops, 2.0 * 4096 * 4096);
  EXPECT_DOUBLE_EQ(q.bytes, 4096.0 * 4096 * 2 + 4096 * 2 + 4096 * 2);
  const Op& att = Get(ops, "attn.decode");
  // QK and PV: 2 x 2 x head_dim FLOPs per (head, key); KV 4,096 B/token/layer.
  EXPECT_DOUBLE_EQ(att.flops, 4.0 * 32 * 128 * 100);
  EXPECT_DOUBLE_EQ(att.bytes, 100.0 * 4096 + 2.0 * 32 * 128 * 2);
  EXPECT_EQ(att.kv_tokens, 100);
  const Op& up = Get(ops, "dense.gate_up_proj");
  EXPECT_EQ(up.n, 2 * 14336);
  EXPECT_DOUBLE_EQ(up.flops, 2.0 * 2 * 14336 * 4096);
  for (const Op& op : ops) EXPECT_NE(op.op_class, OpClass::kCommunication) << op.name;
  const Op& head = Get(ops, "lm_head");
  EXPECT_DOUBLE_EQ(head.flops, 2.0 * 128256 * 4096);
}

TEST(Ops, LlamaPrefillChunkIsCausal) {
  ShardedModel m = Shard("llama-3.1-8b", 1);
  BatchShape b;
  b.prefill = {{10, 5}};  // 10 new tokens after 5 cached: keys 6..15
  const std::vector<Op> ops = StepOps(m, b);
  const Op& att = Get(ops, "attn.prefill");
  EXPECT_DOUBLE_EQ(att.flops, 4.0 * 32 * 128 * (6 + 7 + 8 + 9 + 10 + 11 + 12 + 13 + 14 + 15));
  EXPECT_EQ(Find(ops, "attn.q_proj")->m, 10);
  EXPECT_EQ(Find(ops, "lm_head")->m, 1);
}

TEST(Ops, KimiMlaDecodeAbsorbedAndMoe) {
  const std::vector<Op> ops = DecodeOps(Shard("kimi-k2.6", 8), {1000});
  const Op& att = Get(ops, "attn.mla_decode");
  EXPECT_EQ(att.count, 61);
  EXPECT_EQ(att.heads, 8);
  EXPECT_DOUBLE_EQ(att.flops, 2.0 * 8 * 576 * 1000 + 2.0 * 8 * 512 * 1000);
  EXPECT_DOUBLE_EQ(att.bytes, 1000.0 * 1152 + 8.0 * 576 * 2 + 8.0 * 512 * 2);
  // One token touches 8 experts: 8 token-rows through the fused MoE layer
  // (gate+up: 2 x 256 local rows, down: 256 -> 7168) of INT4 g32 weights
  // with BF16 scales; one op covers top-k, both GEMMs, the activation and
  // the combine, as the engines' fused kernels run them.
  const Op& ex = Get(ops, "moe.experts");
  EXPECT_EQ(ex.kind, OpKind::kGroupedGemm);
  EXPECT_EQ(ex.weight_dtype, Dtype::kInt4);
  EXPECT_EQ(ex.compute_dtype, Dtype::kBf16);
  EXPECT_EQ(ex.group_size, 32);
  EXPECT_EQ(ex.groups, 8);
  EXPECT_EQ(ex.count, 60);
  EXPECT_EQ(ex.n, 3 * 256);
  EXPECT_DOUBLE_EQ(ex.flops, 2.0 * 8 * 3 * 256 * 7168);
  const double w_expert = 3 * (256.0 * 7168 / 2 + 256.0 * (7168 / 32) * 2);
  EXPECT_NEAR(ex.bytes, 8 * w_expert + 2 * 8.0 * 7168 * 2, 1e-3 * ex.bytes);
  EXPECT_EQ(Find(ops, "moe.experts.silu_and_mul"), nullptr);
  EXPECT_EQ(Find(ops, "moe.combine_sum"), nullptr);
  const Op& ar = Get(ops, "attn.all_reduce");
  EXPECT_EQ(ar.participants, 8);
  EXPECT_DOUBLE_EQ(ar.message_bytes, 7168.0 * 2);
  ASSERT_NE(Find(ops, "attn.kv_b_proj.absorbed"), nullptr);
  EXPECT_EQ(Find(ops, "attn.kv_b_proj.expand"), nullptr);
}

// An engine that names an absorbed MLA prefill kernel (SGLang 0.4's Triton
// backend) runs a batch with a cached prefix in the absorbed form: every
// (query, key) pair costs 2 h (576 + 512) FLOPs over the latents instead of
// 2 h (192 + 128) over expanded K/V, and kv_b maps the new tokens' queries
// instead of expanding every cached latent. A batch without a prefix stays MHA.
TEST(Ops, AbsorbedMlaPrefillOnlyWithACachedPrefix) {
  ShardedModel m = Shard("kimi-k2.6", 8);
  auto k = KernelChoices::FromSelectors({{"mla_prefill_absorbed.bf16", "triton_extend"}});
  ASSERT_TRUE(k.ok()) << k.status().message();
  m.kernels = *k;
  BatchShape b;
  b.prefill = {{10, 5}};  // keys 6..15 for the 10 new queries: 105 pairs
  const std::vector<Op> ops = StepOps(m, b);
  const Op& att = Get(ops, "attn.mla_prefill");
  EXPECT_EQ(att.kind, OpKind::kMlaPrefillAbsorbed);
  EXPECT_EQ(att.impl, "triton_extend");
  EXPECT_DOUBLE_EQ(att.flops, 2.0 * 8 * (576 + 512) * 105);
  EXPECT_DOUBLE_EQ(att.bytes, 15.0 * 1152 + 10.0 * 8 * 576 * 2 + 10.0 * 8 * 512 * 2);
  ASSERT_NE(Find(ops, "attn.kv_b_proj.absorbed"), nullptr);
  EXPECT_EQ(Find(ops, "attn.kv_b_proj.absorbed")->m, 10);
  EXPECT_EQ(Find(ops, "attn.kv_b_proj.expand"), nullptr);
  b.prefill = {{10, 0}};
  const std::vector<Op> mha = StepOps(m, b);
  EXPECT_EQ(Get(mha, "attn.mla_prefill").kind, OpKind::kMlaPrefill);
  EXPECT_NE(Find(mha, "attn.kv_b_proj.expand"), nullptr);
}

// SGLang's FA3 backend bounds the batch's summed cached prefix instead:
// 0.4.5.post3 runs every batch under 8192 cached tokens absorbed, fresh
// prompts included; from 0.4.6 a fresh batch runs MHA again. The sum is the
// batch's, not each request's.
TEST(Ops, AbsorbedMlaPrefillByTheBatchsSummedPrefix) {
  ShardedModel m = Shard("kimi-k2.6", 8);
  auto k = KernelChoices::FromSelectors({{"mla_prefill_absorbed.bf16", "fa3_absorbed"}});
  ASSERT_TRUE(k.ok()) << k.status().message();
  m.kernels = *k;
  const auto kind = [&](std::vector<BatchShape::Chunk> chunks) {
    BatchShape b;
    b.prefill = std::move(chunks);
    return Get(StepOps(m, b), "attn.mla_prefill").kind;
  };
  m.mla_absorbed_prefix = {0, 8192};  // 0.4.5.post3
  EXPECT_EQ(kind({{1000, 0}}), OpKind::kMlaPrefillAbsorbed);
  EXPECT_EQ(kind({{1000, 8191}}), OpKind::kMlaPrefillAbsorbed);
  EXPECT_EQ(kind({{1000, 8192}}), OpKind::kMlaPrefill);
  EXPECT_EQ(kind({{100, 4096}, {100, 4096}}), OpKind::kMlaPrefill);
  m.mla_absorbed_prefix = {1, 8192};  // 0.4.6 on
  EXPECT_EQ(kind({{1000, 0}}), OpKind::kMlaPrefill);
  EXPECT_EQ(kind({{1000, 0}, {10, 1}}), OpKind::kMlaPrefillAbsorbed);
  EXPECT_EQ(kind({{1000, 20000}}), OpKind::kMlaPrefill);
  // The engine profile carries both rules by version; the default is the
  // Triton backend's (any cached prefix, unbounded).
  auto v045 = ResolveEngine("sglang", "0.4.5");
  auto v046 = ResolveEngine("sglang", "0.4.6");
  auto v040 = ResolveEngine("sglang", "0.4.0");
  ASSERT_TRUE(v045.ok() && v046.ok() && v040.ok());
  EXPECT_EQ(v045->profile->defaults.mla_absorbed_prefix.from, 0);
  EXPECT_EQ(v045->profile->defaults.mla_absorbed_prefix.below, 8192);
  EXPECT_EQ(v045->profile->kernels.For(OpKind::kMlaPrefillAbsorbed, Dtype::kBf16),
            "sglang_fa3_mla_prefill_absorbed");
  EXPECT_EQ(v046->profile->defaults.mla_absorbed_prefix.from, 1);
  EXPECT_EQ(v046->profile->defaults.mla_absorbed_prefix.below, 8192);
  EXPECT_EQ(v040->profile->defaults.mla_absorbed_prefix.from, 1);
  EXPECT_EQ(v040->profile->defaults.mla_absorbed_prefix.below, 0);
}

TEST(Ops, Glm52DsaReadsTopKAndAllIndexKeys) {
  const std::vector<Op> ops = DecodeOps(Shard("glm-5.2", 8, "fp8"), {5000});
  const Op& att = Get(ops, "attn.mla_decode");
  EXPECT_EQ(att.kv_tokens, 2048);  // index_topk
  const Op& idx = Get(ops, "attn.indexer");
  EXPECT_EQ(idx.count, 20);  // fresh top-k in 1 of 4 of 78 layers
  EXPECT_DOUBLE_EQ(idx.flops, 2.0 * 32 * 128 * 5000);
  EXPECT_DOUBLE_EQ(idx.bytes, 5000.0 * 132 + 32.0 * 128 * 2);
  const Op& q = Get(ops, "attn.q_b_proj");
  EXPECT_EQ(q.weight_dtype, Dtype::kFp8E4m3);
  EXPECT_EQ(q.compute_dtype, Dtype::kFp8E4m3);
}

TEST(Ops, HelpersAndDpAttention) {
  EXPECT_NEAR(ExpectedUniqueExperts(1, 8, 384), 8.0, 1e-9);
  EXPECT_NEAR(ExpectedUniqueExperts(1000, 8, 256), 256.0, 1e-6);
  EXPECT_DOUBLE_EQ(ExpectedUniqueExperts(2, 1, 2), 2 * (1 - 0.25));
  BatchShape b;
  b.prefill = {{100, 0}, {50, 10}};
  b.decode_context = {5, 6, 7};
  EXPECT_EQ(b.TotalTokens(), 153);
  EXPECT_STREQ(OpClassName(OpClass::kDenseGemm), "dense_gemm");

  auto card = LoadModelCard("deepseek-v3");
  ASSERT_TRUE(card.ok());
  ParallelLayout l = test_layouts::DpAttention(8);
  l.ep = 8;
  auto m = ShardModel(*card, l, PrecisionChoice{});
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::vector<Op> ops = DecodeOps(*m, {100, 100});
  // Attention TP 1: full 128 heads, no attention all-reduce; the FFN sees
  // 8 ranks x 2 tokens and returns them with a reduce-scatter.
  EXPECT_EQ(Find(ops, "attn.mla_decode")->heads, 128);
  EXPECT_EQ(Find(ops, "attn.all_reduce"), nullptr);
  EXPECT_DOUBLE_EQ(Find(ops, "dp.all_gather")->message_bytes, 16.0 * 7168 * 2);
  EXPECT_EQ(Find(ops, "moe.gate")->m, 16);
  // Without DeepEP the gather already gives every EP rank every token: no
  // all-to-all, the reduce-scatter sums the ranks' experts.
  EXPECT_EQ(Find(ops, "moe.dispatch"), nullptr);
  EXPECT_EQ(Find(ops, "moe.combine"), nullptr);
  ASSERT_NE(Find(ops, "dp.reduce_scatter"), nullptr);
  // With DeepEP the tokens are exchanged instead.
  l.expert.all_to_all = MoeAllToAll::kDeepEp;
  auto deepep = ShardModel(*card, l, PrecisionChoice{});
  ASSERT_TRUE(deepep.ok()) << deepep.status().message();
  const std::vector<Op> exchanged = DecodeOps(*deepep, {100, 100});
  ASSERT_NE(Find(exchanged, "moe.dispatch"), nullptr);
  ASSERT_NE(Find(exchanged, "moe.combine"), nullptr);
}

// Expert parallelism over TP attention without DeepEP (vLLM's
// --enable-expert-parallel at data-parallel size 1, SGLang's --ep-size
// without an a2a backend): every rank holds every token after the
// attention all-reduce, so the MoE adds no all-to-all; the FFN's all-reduce
// sums the ranks' experts.
TEST(Ops, TpAttentionExpertParallelAddsNoAllToAll) {
  auto card = LoadModelCard("deepseek-v3");
  ASSERT_TRUE(card.ok());
  ParallelLayout l;
  l.gpus = 8, l.tp = 8, l.ep = 8;
  auto m = ShardModel(*card, l, PrecisionChoice{});
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::vector<Op> ops = DecodeOps(*m, {100, 100});
  EXPECT_EQ(Find(ops, "moe.dispatch"), nullptr);
  EXPECT_EQ(Find(ops, "moe.combine"), nullptr);
  ASSERT_NE(Find(ops, "ffn.all_reduce"), nullptr);
  EXPECT_LE(Find(ops, "moe.experts")->groups, 256 / 8);  // its own experts only
}

// A speculative verify step scores k + 1 = 3 positions per request in one
// pass: GEMM rows and attention FLOPs triple, weights and cached KV are read
// once, and every position gets logits.
TEST(Ops, SpeculativeVerifyScoresEveryDraftPosition) {
  for (const char* model : {"llama-3.1-8b", "kimi-k2.6"}) {
    SCOPED_TRACE(model);
    ShardedModel m = Shard(model, 8);
    BatchShape one, three;
    one.decode_context = three.decode_context = {1000, 3000};
    three.decode_query_tokens = 3;
    EXPECT_EQ(three.TotalTokens(), 6);
    std::vector<Op> a, b;
    BuildStepOps(m, one, &a);
    BuildStepOps(m, three, &b);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      SCOPED_TRACE(a[i].name);
      ASSERT_EQ(a[i].name, b[i].name);
      if (a[i].kind == OpKind::kGemm) {
        EXPECT_EQ(b[i].m, 3 * a[i].m);
        EXPECT_DOUBLE_EQ(b[i].flops, 3 * a[i].flops);
      }
      if (a[i].kind == OpKind::kAttentionDecode || a[i].kind == OpKind::kMlaDecode) {
        EXPECT_EQ(b[i].batch, a[i].batch);
        EXPECT_EQ(b[i].kv_tokens, a[i].kv_tokens);
        EXPECT_DOUBLE_EQ(b[i].flops, 3 * a[i].flops);
        EXPECT_GT(b[i].bytes, a[i].bytes);  // more Q and O rows
        EXPECT_LT(b[i].bytes, 3 * a[i].bytes);  // the same cached KV
      }
    }
    const Op* head = Find(b, "lm_head");
    ASSERT_NE(head, nullptr);
    EXPECT_EQ(head->m, 6);
  }
}

}  // namespace
}  // namespace capplan::models
