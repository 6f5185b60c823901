// Routed and redundant experts over EP ranks as each engine version splits
// them (models/engines/*.json expert_parallel), the memory each rank holds,
// and the shared experts DeepEP keeps whole; figures worked by hand.
#include <gtest/gtest.h>

#include "hw/profile.h"
#include "models/card.h"
#include "models/engine_profile.h"
#include "models/expert_parallel.h"
#include "models/memory.h"
#include "models/ops.h"

namespace capplan::models {
namespace {

// One routed DeepSeek-V3 expert over its 58 MoE layers: 3 FP8 matrices of
// 7168 x 2048 and their 128 x 128-block FP32 scales, 58 x 44,050,944 B.
constexpr int64_t kDeepSeekExpertBytes = 2554954752;

// A decode layout of `ranks` GPUs: DP attention and DeepEP on every GPU.
ParallelLayout DeepEp(int ranks, int redundant) {
  ParallelLayout l;
  l.gpus = l.tp = l.ep = l.dp = ranks;
  l.dp_attention = true;
  l.gpus_per_node = 8;
  l.nodes = ranks / 8;
  l.expert.all_to_all = MoeAllToAll::kDeepEp;
  l.expert.redundant_experts = redundant;
  return l;
}

ModelCard Card(const std::string& name) {
  auto card = LoadModelCard(name);
  EXPECT_TRUE(card.ok()) << card.status().message();
  return *card;
}

const EngineProfile& Engine(const std::string& engine, const std::string& version) {
  auto r = ResolveEngine(engine, version);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return *r->profile;
}

// SGLang places (routed + redundant) / ep physical experts on every rank and
// asserts they divide: 256 over 48 ranks is refused with the count that
// fits (256 + 32 = 288 = 6 x 48); 144 ranks take 32 as well (2 each).
TEST(ExpertSplit, SglangNeedsRoutedPlusRedundantToDivide) {
  const ModelCard card = Card("deepseek-v3");
  const EngineProfile& sglang = Engine("sglang", "0.5.4");
  Status st = CheckExpertSplit(card, DeepEp(48, 0), sglang);
  EXPECT_EQ(st.code(), StatusCode::kInvalidConfig);
  EXPECT_EQ(st.message().find('\n'), std::string::npos);
  EXPECT_EQ(st.message().rfind("expert_parallel/redundant_experts: 256 routed + 0 redundant "
                               "experts do not divide over ep 48; sglang 0.5.4 places",
                               0),
            0u)
      << st.message();
  EXPECT_NE(st.message().find("models/engines/sglang.json expert_parallel): set it to 32 "
                              "(288 = 6 x 48), or an ep that divides 256"),
            std::string::npos)
      << st.message();
  EXPECT_TRUE(CheckExpertSplit(card, DeepEp(48, 32), sglang).ok());
  EXPECT_TRUE(CheckExpertSplit(card, DeepEp(144, 32), sglang).ok());
  st = CheckExpertSplit(card, DeepEp(48, 16), sglang);
  EXPECT_NE(st.message().find("set it to 32 (288 = 6 x 48)"), std::string::npos) << st.message();
  // The card and the layout alone no longer refuse 48 ranks.
  EXPECT_TRUE(ValidateLayout(card, DeepEp(48, 0)).ok());
}

// vLLM without EPLB spreads the remainder over the first ranks (256 over 48:
// 16 ranks of 6, 32 of 5); with redundant experts (EPLB, from 0.19.0 here)
// the sum must divide; 0.8.0 has no EPLB.
TEST(ExpertSplit, VllmSplitsUnevenlyWithoutEplbAndEvenlyWithIt) {
  const ModelCard card = Card("deepseek-v3");
  const EngineProfile& vllm = Engine("vllm", "0.19.0");
  EXPECT_TRUE(CheckExpertSplit(card, DeepEp(48, 0), vllm).ok());
  EXPECT_TRUE(CheckExpertSplit(card, DeepEp(48, 32), vllm).ok());
  Status st = CheckExpertSplit(card, DeepEp(48, 16), vllm);
  EXPECT_EQ(st.message().rfind("expert_parallel/redundant_experts: 256 routed + 16 redundant "
                               "experts do not divide over ep 48; vllm 0.19.0",
                               0),
            0u)
      << st.message();
  st = CheckExpertSplit(card, DeepEp(48, 32), Engine("vllm", "0.8.0"));
  EXPECT_EQ(st.message().rfind("expert_parallel/redundant_experts: vllm 0.8.0 runs no "
                               "redundant experts",
                               0),
            0u)
      << st.message();
}

// Each rank holds (E + R) / ep experts: 288 / 48 = 6 slots, as many as the
// fullest rank of 256 / 48 (ceil 6), so the redundant term adds nothing over
// the weights; 336 / 48 = 7 slots add one expert. 144 ranks: 2 slots each.
TEST(ExpertSplit, EachRankHoldsRoutedPlusRedundantOverEp) {
  const ModelCard card = Card("deepseek-v3");
  auto h200 = hw::LoadHardwareProfile("h200-sxm");
  ASSERT_TRUE(h200.ok()) << h200.status().message();
  const DeviceMemory dev{h200->gpu_memory_bytes, h200->gpu_runtime_memory_bytes, &*h200};
  EngineMemoryOptions opt;
  opt.engine = "sglang";
  opt.mem_fraction = 0.85;
  opt.cuda_graph_max_bs = 128;
  PrecisionChoice fp8_kv;
  fp8_kv.kv_cache = Dtype::kFp8E4m3;
  auto experts = [](const MemoryPlan& p) {
    for (const ComponentWeights& c : p.weights.components) {
      if (c.component == Component::kExperts) return c.bytes_per_gpu + c.scale_bytes_per_gpu;
    }
    return int64_t{-1};
  };
  auto six = PlanMemory(card, DeepEp(48, 32), fp8_kv, opt, dev, 4096);
  auto seven = PlanMemory(card, DeepEp(48, 80), fp8_kv, opt, dev, 4096);
  auto two = PlanMemory(card, DeepEp(144, 32), fp8_kv, opt, dev, 4096);
  ASSERT_TRUE(six.ok()) << six.status().message();
  ASSERT_TRUE(seven.ok()) << seven.status().message();
  ASSERT_TRUE(two.ok()) << two.status().message();
  EXPECT_EQ(experts(*six), 6 * kDeepSeekExpertBytes);
  EXPECT_EQ(six->Term("eplb_redundant_expert_bytes"), 0);
  EXPECT_EQ(seven->Term("eplb_redundant_expert_bytes"), kDeepSeekExpertBytes);
  EXPECT_EQ(experts(*two), 2 * kDeepSeekExpertBytes);
  int64_t sum = 0;
  for (const MemoryTerm& t : six->terms) sum += t.bytes;
  EXPECT_EQ(sum, six->gpu_memory_bytes);
}

// Kimi K2.6 decode at TP 96 with DP attention: the shared expert's
// intermediate size 2048 does not divide by 96, which matters only where it
// is sharded; under DeepEP every rank holds it whole (SGLang builds it with
// tp_size 1), all of its parameters on every GPU.
TEST(ExpertSplit, UnshardedSharedExpertsNeedNoTpDivisibility) {
  const ModelCard card = Card("kimi-k2.6");
  ParallelLayout l = DeepEp(96, 0);
  ASSERT_TRUE(ValidateLayout(card, l).ok()) << ValidateLayout(card, l).message();
  EXPECT_TRUE(CheckExpertSplit(card, l, Engine("sglang", "0.5.4")).ok());  // 384 = 4 x 96
  auto w = ComputeWeights(card, l, PrecisionChoice{});
  ASSERT_TRUE(w.ok()) << w.status().message();
  for (const ComponentWeights& c : w->components) {
    if (c.component != Component::kSharedExperts) continue;
    EXPECT_EQ(c.params_per_gpu, c.params_total);
  }
  l.expert.all_to_all = MoeAllToAll::kCollective;
  const Status st = ValidateLayout(card, l);
  EXPECT_EQ(st.code(), StatusCode::kInvalidConfig);
  EXPECT_NE(st.message().find("--tp 96 does not divide the shared experts' intermediate size "
                              "2048"),
            std::string::npos)
      << st.message();
}

// Contiguous placement of an uneven split: 10 equal experts over 4 ranks
// hold 3, 3, 2, 2, so the fullest carries 3 of a mean 2.5.
TEST(ExpertSplit, UnevenContiguousPlacementLoadsTheFirstRanks) {
  const std::vector<double> load(10, 1.0);
  EXPECT_DOUBLE_EQ(PlacementImbalance(load, 4, 0), 3 / 2.5);
  // EPLB with 2 redundant: two experts halved, 12 slots of 3 per rank, each
  // rank two whole experts and one half: 2.5, balanced.
  EXPECT_DOUBLE_EQ(PlacementImbalance(load, 4, 2), 1.0);
}

// vLLM keeps the dense layers on each DP rank (sharded over its TP group,
// here 1: whole on every GPU) and runs them on the rank's own tokens, so no
// DP gather runs under DeepEP; SGLang gathers every rank's tokens for them
// and shards them over the whole TP group. DeepSeek-V3's 3 dense layers:
// gate+up 2 x 18432 x 7168 and down 7168 x 18432 per layer.
TEST(ExpertSplit, VllmKeepsDenseLayersOnEachDpRank) {
  const ModelCard card = Card("deepseek-v3");
  ParallelLayout l = DeepEp(48, 32);
  l.dense_ffn_per_dp_rank = true;  // vLLM's rule (models/engines/vllm.json)
  auto weights = [&](const ParallelLayout& x) {
    auto w = ComputeWeights(card, x, PrecisionChoice{});
    EXPECT_TRUE(w.ok()) << w.status().message();
    for (const ComponentWeights& c : w->components) {
      if (c.component == Component::kDenseFfn) return c.params_per_gpu;
    }
    return int64_t{-1};
  };
  EXPECT_EQ(weights(l), int64_t{3} * 3 * 18432 * 7168);
  BatchShape b;
  b.decode_context.assign(64, 4096);
  auto ops_of = [&](const ParallelLayout& x) {
    auto m = ShardModel(card, x, PrecisionChoice{});
    EXPECT_TRUE(m.ok()) << m.status().message();
    std::vector<Op> ops;
    BuildStepOps(*m, b, &ops);
    return ops;
  };
  int gathers = 0;
  for (const Op& op : ops_of(l)) gathers += op.name == "dp.all_gather";
  EXPECT_EQ(gathers, 0);
  ParallelLayout sglang = DeepEp(48, 32);
  EXPECT_EQ(weights(sglang), int64_t{3} * 3 * 18432 * 7168 / 48);
  gathers = 0;
  for (const Op& op : ops_of(sglang)) gathers += op.name == "dp.all_gather";
  EXPECT_EQ(gathers, 1);  // one op, counted over the 3 dense layers
}

}  // namespace
}  // namespace capplan::models
