// Expert parallelism across nodes: DeepEP's bytes per fabric, the busiest
// rank's grouped GEMM under hot experts and EPLB, and the layout rules a
// card or a profile decides; every figure worked by hand in the comments.
#include <gtest/gtest.h>

#include "hw/profile.h"
#include "models/card.h"
#include "models/expert_parallel.h"
#include "models/memory.h"
#include "models/ops.h"

namespace capplan::models {
namespace {

// DeepSeek-V3 (hidden 7168, 256 routed experts, top-8) at EP32: 32 GPUs,
// DP attention on every GPU, as 4 nodes of 8 over RDMA.
ParallelLayout WideEp(NodeLink link, int gpus_per_node) {
  ParallelLayout l;
  l.gpus = l.tp = l.ep = l.dp = 32;
  l.dp_attention = true;
  l.gpus_per_node = gpus_per_node;
  l.nodes = 32 / gpus_per_node;
  l.node_link = link;
  l.expert.all_to_all = MoeAllToAll::kDeepEp;
  return l;
}

ModelCard DeepSeek() {
  auto card = LoadModelCard("deepseek-v3");
  EXPECT_TRUE(card.ok()) << card.status().message();
  return *card;
}

TEST(ExpertParallel, MessageBytesAsDeepEpLaysThemOut) {
  // Low latency: 16 B header + 7168 FP8 values + 7168/128 = 56 FP32 scales.
  EXPECT_DOUBLE_EQ(LowLatencyDispatchBytes(7168), 16 + 7168 + 56 * 4);  // 7408
  EXPECT_DOUBLE_EQ(LowLatencyCombineBytes(7168), 14336);                // BF16
  // Normal: 7168 + 8 (source meta) + 224 (scales) + 8 * 4 (top-k ids) +
  // 8 * 4 (weights) = 7464, aligned to 16: 7472; combine 14336 + 8 + 32 =
  // 14376 -> 14384.
  EXPECT_DOUBLE_EQ(NormalDispatchBytes(7168, 8), 7472);
  EXPECT_DOUBLE_EQ(NormalCombineBytes(7168, 8), 14384);
}

TEST(ExpertParallel, LowLatencyDecodeOverRdma) {
  const ModelCard card = DeepSeek();
  const ParallelLayout l = WideEp(NodeLink::kRdma, 8);
  // 64 tokens per rank x top-8 = 512 messages; 7 of the 32 ranks share the
  // node's NVLink (112 messages), 24 are on other nodes (384 messages).
  const AllToAllTraffic d = DispatchTraffic(card, l, 64, AllToAllMode::kLowLatency);
  EXPECT_DOUBLE_EQ(d.nvlink_bytes, 112.0 * 7408);  // 829,696 B
  EXPECT_DOUBLE_EQ(d.rdma_bytes, 384.0 * 7408);    // 2,844,672 B
  const AllToAllTraffic c = CombineTraffic(card, l, 64, AllToAllMode::kLowLatency);
  EXPECT_DOUBLE_EQ(c.nvlink_bytes, 112.0 * 14336);  // 1,605,632 B
  EXPECT_DOUBLE_EQ(c.rdma_bytes, 384.0 * 14336);    // 5,505,024 B
}

TEST(ExpertParallel, LowLatencyDecodeInsideOneNvl72Domain) {
  const ModelCard card = DeepSeek();
  // 8 compute trays of 4 GB200s in one NVLink domain: 31 of 32 ranks are
  // NVLink peers, 512 * 31/32 = 496 messages, none over RDMA.
  const ParallelLayout l = WideEp(NodeLink::kNvlink, 4);
  const AllToAllTraffic d = DispatchTraffic(card, l, 64, AllToAllMode::kLowLatency);
  EXPECT_DOUBLE_EQ(d.nvlink_bytes, 496.0 * 7408);  // 3,674,368 B
  EXPECT_DOUBLE_EQ(d.rdma_bytes, 0);
}

TEST(ExpertParallel, NormalPrefillDedupsPerRankAndNode) {
  const ModelCard card = DeepSeek();
  const ParallelLayout l = WideEp(NodeLink::kRdma, 8);
  // hit(s) = 1 - C(256-s, 8) / C(256, 8): a rank holds 8 experts, a node 64.
  double miss8 = 1, miss64 = 1;
  for (int i = 0; i < 8; ++i) {
    miss8 *= (248.0 - i) / (256.0 - i);
    miss64 *= (192.0 - i) / (256.0 - i);
  }
  EXPECT_NEAR(TokenHitsExperts(256, 8, 8), 1 - miss8, 1e-15);  // 0.2255
  EXPECT_NEAR(TokenHitsExperts(256, 8, 64), 1 - miss64, 1e-15);  // 0.9017
  // 1024 tokens per rank: one RDMA copy per other node hit (3 nodes), and
  // this GPU forwards for 4 source ranks to 7 local peers.
  const AllToAllTraffic d = DispatchTraffic(card, l, 1024, AllToAllMode::kNormal);
  EXPECT_NEAR(d.rdma_bytes, 1024.0 * 3 * (1 - miss64) * 7472, 1e-6);   // ~20.7 MB
  EXPECT_NEAR(d.nvlink_bytes, 1024.0 * 4 * 7 * (1 - miss8) * 7472, 1e-6);  // ~48.3 MB
}

TEST(ExpertParallel, HotExpertsScaleTheBusiestRank) {
  const ModelCard card = DeepSeek();
  ParallelLayout l = WideEp(NodeLink::kRdma, 8);
  l.expert.hot_expert_factor = 1.5;
  // 2048 tokens (64 per rank) x 8 / 32 ranks = 512 rows, x1.5 = 768.
  const ExpertRankLoad busy = BusiestExpertRank(card, l, 2048);
  EXPECT_DOUBLE_EQ(busy.rows, 768);
  // 8 slots, each picked with 1 - (1 - 8/256)^(1.5 * 2048): all touched.
  EXPECT_NEAR(busy.touched_experts, 8, 1e-9);
  const AllToAllTraffic d = DispatchTraffic(card, l, 64, AllToAllMode::kLowLatency);
  EXPECT_DOUBLE_EQ(d.rdma_bytes, 1.5 * 384 * 7408);
}

TEST(ExpertParallel, EplbSpreadsAHotExpert) {
  // 8 experts on 4 ranks; expert 0 carries 7 of 14 units of load.
  const std::vector<double> load = {7, 1, 1, 1, 1, 1, 1, 1};
  // Contiguous: rank 0 holds experts 0 and 1 = 8 units; mean 14/4 = 3.5.
  EXPECT_DOUBLE_EQ(PlacementImbalance(load, 4, 0), 8 / 3.5);
  // Four redundant experts, one slot per rank: expert 0 is replicated while
  // its per-replica load is the largest: 7 -> 3.5 -> 2.33 -> 1.75 -> 1.4
  // (5 copies), 12 slots of loads 1.4 x5 and 1 x7, 3 per rank, packed
  // heaviest first onto the lightest rank with a free slot: {1.4,1.4,1} =
  // 3.8 and three of {1.4,1,1} = 3.4.
  EXPECT_NEAR(PlacementImbalance(load, 4, 4), 3.8 / 3.5, 1e-12);
}

TEST(ExpertParallel, DecodeStepOpsCarryTheTraffic) {
  const ModelCard card = DeepSeek();
  auto m = ShardModel(card, WideEp(NodeLink::kRdma, 8), PrecisionChoice{});
  ASSERT_TRUE(m.ok()) << m.status().message();
  BatchShape b;
  b.decode_context.assign(64, 4096);  // one attention rank's 64 requests
  std::vector<Op> ops;
  BuildStepOps(*m, b, &ops);
  int dispatches = 0;
  double dense_norm = 0, moe_norm = 0;  // one layer's norm bytes
  for (const Op& op : ops) {
    // Under DeepEP the MoE layers keep each rank's tokens: the DP gather
    // runs only for the 3 dense layers.
    if (op.name == "dp.all_gather" || op.name == "dp.reduce_scatter") {
      EXPECT_EQ(op.count, 3);
    }
    // SGLang runs the router and the shared expert on the rank's own 64
    // tokens, the shared expert unsharded (gate and up fused, 2 x 2048 rows
    // of 7168, not 2 x 2048 / 32).
    if (op.name == "moe.gate" || op.name.starts_with("moe.shared.")) {
      EXPECT_EQ(op.count, 58) << op.name;
      if (op.kind != OpKind::kElementwise) {
        EXPECT_EQ(op.m, 64) << op.name;
      }
    }
    if (op.name == "moe.shared.gate_up_proj") {
      EXPECT_EQ(op.n, 4096);
      EXPECT_EQ(op.k, 7168);
    }
    if (op.name == "moe.shared.down_proj") {
      EXPECT_EQ(op.k, 2048);
    }
    // The post-attention norm runs where the FFN's input is: the 3 dense
    // layers' on every rank's 64 tokens gathered (2048), the MoE layers' on
    // the rank's own 64.
    if (op.name == "norm.post_attention") {
      (op.count == 3 ? dense_norm : moe_norm) = op.bytes;
      EXPECT_TRUE(op.count == 3 || op.count == 58) << op.count;
    }
    if (op.name != "moe.dispatch") continue;
    ++dispatches;
    EXPECT_EQ(op.count, 58);  // 61 layers, 3 dense
    EXPECT_EQ(op.a2a.mode, AllToAllMode::kLowLatency);
    EXPECT_DOUBLE_EQ(op.a2a.rdma_bytes, 384.0 * 7408);
  }
  EXPECT_EQ(dispatches, 1);
  EXPECT_GT(moe_norm, 0);
  EXPECT_DOUBLE_EQ(dense_norm, 32 * moe_norm);
}

TEST(ExpertParallel, CardRulesNameTheField) {
  const ModelCard card = DeepSeek();
  ParallelLayout l = WideEp(NodeLink::kRdma, 8);
  l.expert.expert_load = {1, 2, 3};
  Status st = CheckExpertPlacement(card, l);
  EXPECT_EQ(st.code(), StatusCode::kInvalidConfig);
  EXPECT_EQ(st.message().rfind("expert_parallel/expert_load: has 3 entries", 0), 0u)
      << st.message();
  l.expert.expert_load.clear();
  l.ep = 8;  // DeepEP with 4 GPUs of TP per EP rank
  st = CheckExpertPlacement(card, l);
  EXPECT_NE(st.message().find("ep 8 must equal tp 32"), std::string::npos) << st.message();
}

TEST(ExpertParallel, FabricRulesNameTheFieldAndTheFix) {
  auto b200 = hw::LoadHardwareProfile("b200-sxm");
  ASSERT_TRUE(b200.ok()) << b200.status().message();
  // An NVLink domain of 32 GPUs on HGX B200 boxes of 8.
  Status st = CheckFabric(WideEp(NodeLink::kNvlink, 8), *b200);
  EXPECT_EQ(st.code(), StatusCode::kInvalidConfig);
  EXPECT_EQ(st.message().rfind("node_link: nvlink across 4 nodes", 0), 0u) << st.message();
  EXPECT_NE(st.message().find("gb200-nvl72"), std::string::npos) << st.message();
  // A 16-GPU node on a baseboard of 8.
  st = CheckFabric(WideEp(NodeLink::kRdma, 16), *b200);
  EXPECT_EQ(st.message().rfind("gpus_per_node: 16 GPUs exceeds the 8", 0), 0u) << st.message();
  auto gb200 = hw::LoadHardwareProfile("gb200-nvl72");
  ASSERT_TRUE(gb200.ok()) << gb200.status().message();
  EXPECT_TRUE(CheckFabric(WideEp(NodeLink::kNvlink, 4), *gb200).ok());
  EXPECT_TRUE(CheckFabric(WideEp(NodeLink::kRdma, 8), *b200).ok());
}

// One node holds at most one NVLink domain: 16 GPUs as one node of HGX
// H200 (8 a board) is refused with the two-node layout as the fix; 8 fit
// one HGX node and 72 one NVL72 rack.
TEST(ExpertParallel, OneNodeHoldsAtMostOneNvlinkDomain) {
  auto h200 = hw::LoadHardwareProfile("h200-sxm");
  auto gb200 = hw::LoadHardwareProfile("gb200-nvl72");
  ASSERT_TRUE(h200.ok() && gb200.ok());
  ParallelLayout l;
  l.gpus = l.tp = 16;
  l.nodes = 1;
  l.gpus_per_node = 16;
  Status st = CheckFabric(l, *h200);
  EXPECT_EQ(st.code(), StatusCode::kInvalidConfig);
  EXPECT_EQ(st.message(),
            "gpus_per_node: 16 GPUs exceeds the 8 one h200-sxm NVLink domain joins; set "
            "gpus_per_node 8 and nodes 2");
  l.gpus = l.tp = l.gpus_per_node = 8;
  EXPECT_TRUE(CheckFabric(l, *h200).ok());
  l.gpus = l.tp = l.gpus_per_node = 72;
  EXPECT_TRUE(CheckFabric(l, *gb200).ok());
  l.gpus = l.tp = 16;
  l.nodes = 2;
  l.gpus_per_node = 8;
  l.node_link = NodeLink::kRdma;
  EXPECT_TRUE(CheckFabric(l, *h200).ok());
}

// EPLB redundant experts take weight memory and give it back from the KV
// pool. DeepSeek-V3/R1 at EP32 with 32 redundant experts (1 per rank), the
// count the LMSYS large-scale EP launch commands pass
// (--ep-num-redundant-experts 32, github.com/sgl-project/sglang/issues/6017,
// the instructions of lmsys.org/blog/2025-05-05-large-scale-ep/). One
// routed expert: 58 MoE layers x 3 matrices of 7168 x 2048 FP8 values
// (44,040,192 B per layer) plus 128x128-block FP32 scales (56 x 16 x 4 B =
// 3,584 B per matrix, 10,752 B per layer): 58 x 44,050,944 =
// 2,554,954,752 B. Each rank holds (256 + 32) / 32 = 9 slots instead of 8,
// so one slot more: 2,554,954,752 B, and the KV pool loses that much.
TEST(ExpertParallel, RedundantExpertsWeighOneExpertSlotEachInTheMemoryPlan) {
  const ModelCard card = DeepSeek();
  EngineMemoryOptions opt;
  opt.engine = "sglang";
  auto h200 = hw::LoadHardwareProfile("h200-sxm");
  ASSERT_TRUE(h200.ok()) << h200.status().message();
  const DeviceMemory dev{h200->gpu_memory_bytes, h200->gpu_runtime_memory_bytes, &*h200};
  PrecisionChoice fp8_kv;
  fp8_kv.kv_cache = Dtype::kFp8E4m3;
  ParallelLayout l = WideEp(NodeLink::kRdma, 8);
  auto base = PlanMemory(card, l, fp8_kv, opt, dev, 4096);
  l.expert.redundant_experts = 32;
  auto eplb = PlanMemory(card, l, fp8_kv, opt, dev, 4096);
  ASSERT_TRUE(base.ok()) << base.status().message();
  ASSERT_TRUE(eplb.ok()) << eplb.status().message();
  EXPECT_EQ(base->Term("eplb_redundant_expert_bytes"), 0);
  EXPECT_EQ(eplb->Term("eplb_redundant_expert_bytes"), 2554954752);
  EXPECT_EQ(eplb->weights_resident_bytes - base->weights_resident_bytes, 2554954752);
  // 35,136 B of FP8 latent per token (576 x 61): about 72,716 tokens fewer
  // per rank, less the page rounding.
  const int64_t lost = base->kv_tokens_per_rank - eplb->kv_tokens_per_rank;
  EXPECT_EQ(eplb->kv.bytes_per_token, 35136);
  EXPECT_NEAR(static_cast<double>(lost), 2554954752.0 / 35136, 64);
}

// Under DeepEP every GPU holds the whole shared expert (SGLang builds it
// with tp_size 1): 58 MoE layers x 3 matrices of 2048 x 7168 FP8 weights
// plus one FP32 scale per 128 x 128 block (16 x 56 = 896 scales, 3,584 B):
// 58 x 3 x (14,680,064 + 3,584) = 2,554,954,752 B; a TP32 shard holds a
// 32nd of the weights (its scales round up to whole blocks).
TEST(ExpertParallel, DeepEpHoldsTheWholeSharedExpertOnEveryGpu) {
  const ModelCard card = DeepSeek();
  PrecisionChoice c;
  ParallelLayout l = WideEp(NodeLink::kRdma, 8);
  auto deepep = ComputeWeights(card, l, c);
  l.expert.all_to_all = MoeAllToAll::kCollective;
  auto collective = ComputeWeights(card, l, c);
  ASSERT_TRUE(deepep.ok()) << deepep.status().message();
  ASSERT_TRUE(collective.ok()) << collective.status().message();
  auto shared = [](const WeightBreakdown& w) {
    for (const ComponentWeights& x : w.components) {
      if (x.component == Component::kSharedExperts) return x.bytes_per_gpu + x.scale_bytes_per_gpu;
    }
    return int64_t{-1};
  };
  EXPECT_EQ(shared(*deepep), int64_t{58} * 3 * (2048 * 7168 + 3584));
  EXPECT_GT(shared(*collective), 0);
  EXPECT_GT(shared(*deepep), 31 * shared(*collective));
}

}  // namespace
}  // namespace capplan::models
