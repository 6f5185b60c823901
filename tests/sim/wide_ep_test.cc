// Wide expert parallelism across nodes, priced: a DeepSeek-R1 EP32 decode
// step op by op over 4 H200 nodes on RDMA and inside one GB200 NVL72
// domain, with the all-to-all bytes and seconds worked by hand; the layout
// errors a scenario gets; the shipped wide-EP scenarios run, the PD one
// with its KV link derived from where its pools sit.
#include <gtest/gtest.h>

#include "common/data_path.h"
#include "models/card.h"
#include "models/expert_parallel.h"
#include "models/ops.h"
#include "sim/cost_model.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "tests/test_util/expect_text.h"

namespace capplan::sim {
namespace {

using test_util::ExpectContains;
using test_util::ExpectErrorContains;

models::ParallelLayout Ep32(models::NodeLink link, int gpus_per_node) {
  models::ParallelLayout l;
  l.gpus = l.tp = l.ep = l.dp = 32;
  l.dp_attention = true;
  l.gpus_per_node = gpus_per_node;
  l.nodes = 32 / gpus_per_node;
  l.node_link = link;
  l.expert.all_to_all = models::MoeAllToAll::kDeepEp;
  return l;
}

// One decode step of 64 requests on each attention rank, priced op by op.
struct PricedStep {
  struct Priced {
    models::Op op;
    OpPrice price;
  };
  std::vector<models::Op> ops;
  std::vector<OpPrice> prices;
  // The op named `name` and its price; a missing op fails the test and reads
  // as a default one.
  Priced Get(const std::string& name) const {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].name == name) return {ops[i], prices[i]};
    }
    ADD_FAILURE() << "no op " << name;
    return {};
  }
};

PricedStep Price(const std::string& hardware, const models::ParallelLayout& l) {
  auto card = models::LoadModelCard("deepseek-v3");
  EXPECT_TRUE(card.ok());
  auto m = models::ShardModel(*card, l, models::PrecisionChoice{});
  EXPECT_TRUE(m.ok()) << m.status().message();
  auto profile = hw::LoadHardwareProfile(hardware);
  EXPECT_TRUE(profile.ok()) << profile.status().message();
  auto cost = MakeCostModel("roofline", *profile);
  EXPECT_TRUE(cost.ok());
  models::BatchShape b;
  b.decode_context.assign(64, 4096);
  PricedStep s;
  models::BuildStepOps(*m, b, &s.ops);
  StepContext ctx;
  ctx.nvlink_gpus = l.NvlinkGpus();
  s.prices = (*cost)->ExplainOps(s.ops, ctx);
  return s;
}

TEST(WideEp, DecodeStepOverFourH200NodesOnRdma) {
  const PricedStep s = Price("h200-sxm", Ep32(models::NodeLink::kRdma, 8));
  const PricedStep::Priced dispatch = s.Get("moe.dispatch");
  // 64 tokens x top-8 = 512 messages of 16 + 7168 + 56 * 4 = 7408 B; 7 of
  // 32 ranks are NVLink peers (112 messages = 829,696 B), 24 are on the
  // other 3 nodes (384 messages = 2,844,672 B).
  EXPECT_DOUBLE_EQ(dispatch.op.a2a.nvlink_bytes, 829696);
  EXPECT_DOUBLE_EQ(dispatch.op.a2a.rdma_bytes, 2844672);
  // Low latency on H200: 10 us + max(829,696 / (450 GB/s x 0.75) = 2.46 us,
  // 2,844,672 / (50 GB/s x 0.82) = 69.38 us) = 79.38 us, x 58 MoE layers.
  const double per_layer = 10e-6 + 2844672 / (50e9 * 0.82);
  EXPECT_NEAR(dispatch.price.seconds, 58 * per_layer, 1e-12);  // 4.60 ms
  EXPECT_EQ(dispatch.price.table_kind, "deepep low_latency");
  // Combine: 384 x 14,336 B = 5,505,024 B over RDMA: 10 + 134.27 us.
  const PricedStep::Priced combine = s.Get("moe.combine");
  EXPECT_DOUBLE_EQ(combine.op.a2a.rdma_bytes, 5505024);
  EXPECT_NEAR(combine.price.seconds, 58 * (10e-6 + 5505024 / (50e9 * 0.82)), 1e-12);  // 8.37 ms
  // The DP gather around the 3 dense layers spans the 4 nodes: 32 ranks x
  // 64 tokens x 7168 x 2 B = 29.4 MB at the ring's slowest link, the
  // 50 GB/s NIC: 7.8 us + 29,360,128 x 31/32 / 50e9 = 576.6 us per layer.
  const PricedStep::Priced gather = s.Get("dp.all_gather");
  EXPECT_EQ(gather.op.count, 3);
  EXPECT_EQ(gather.price.table_kind, "ring over rdma");
  EXPECT_NEAR(gather.price.seconds, 3 * (7.8e-6 + 29360128.0 * 31 / 32 / 50e9), 1e-9);
}

TEST(WideEp, DecodeStepInsideOneNvl72Domain) {
  const PricedStep s = Price("gb200-nvl72", Ep32(models::NodeLink::kNvlink, 4));
  const PricedStep::Priced dispatch = s.Get("moe.dispatch");
  // 31 of 32 ranks are NVLink peers: 496 x 7408 = 3,674,368 B, none on RDMA;
  // 10 us + 3,674,368 / (900 GB/s x 0.71) = 5.75 us, x 58.
  EXPECT_DOUBLE_EQ(dispatch.op.a2a.nvlink_bytes, 3674368);
  EXPECT_DOUBLE_EQ(dispatch.op.a2a.rdma_bytes, 0);
  EXPECT_NEAR(dispatch.price.seconds, 58 * (10e-6 + 3674368 / (900e9 * 0.71)), 1e-12);  // 0.91 ms
  const PricedStep::Priced gather = s.Get("dp.all_gather");
  EXPECT_EQ(gather.price.table_kind, "ring");
}

nlohmann::json WideEpDoc() {
  auto doc = ReadJsonFile(DataPath("scenarios/wide-ep/deepseek-r1-ep32-h200-rdma.json"));
  EXPECT_TRUE(doc.ok());
  (*doc)["workload"]["num_requests"] = 64;
  (*doc)["workload"]["warmup_requests"] = 0;
  (*doc)["workload"]["concurrency"] = 64;
  (*doc)["workload"]["output_tokens"]["value"] = 8;
  return *doc;
}

TEST(WideEp, BadLayoutsAreOneLineErrorsNamingTheField) {
  auto doc = WideEpDoc();
  doc["deployment"]["gpus_per_node"] = 4;
  auto r = ParseScenario(doc, "w.json");
  ExpectErrorContains(r, StatusCode::kInvalidConfig,
                      "w.json: /deployment/gpus_per_node: 4 nodes x 4 GPUs is 16, "
                      "not gpus 32; set gpus_per_node 8");
  // An NVLink domain across 4 HGX B200 boxes.
  doc = WideEpDoc();
  doc["hardware"] = "b200-sxm";
  doc["deployment"]["node_link"] = "nvlink";
  auto sc = ParseScenario(doc, "w.json");
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  auto run = RunScenario(**sc, RunOptions{});
  ASSERT_FALSE(run.ok());
  const std::string& m = run.status().message();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  ExpectContains(m,
                 "w.json: /deployment/node_link: nvlink across 4 nodes needs one NVLink domain "
                 "of 32 GPUs; b200-sxm's joins 8");
  ExpectContains(m, "gb200-nvl72");
  // DeepEP with 4 GPUs of TP inside each EP rank.
  doc = WideEpDoc();
  doc["deployment"]["ep"] = 8;
  sc = ParseScenario(doc, "w.json");
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  run = RunScenario(**sc, RunOptions{});
  ASSERT_FALSE(run.ok());
  ExpectContains(run.status().message(),
                 "/deployment/expert_parallel/all_to_all: deepep runs one "
                 "EP rank per GPU");
}

TEST(WideEp, ShippedScenariosRun) {
  for (const char* f :
       {"deepseek-r1-ep32-h200-rdma.json", "deepseek-r1-ep32-gb200-nvl72.json",
        "deepseek-r1-ep16-h200-2node.json", "deepseek-r1-pd-gb200-nvl72.json",
        "deepseek-r1-ep48-h200-redundant.json", "deepseek-r1-ep144-h200-redundant.json",
        "deepseek-r1-ep48-gb200-nvl72.json", "kimi-k2.6-pd-128xh200.json",
        "glm-5.2-vllm-dp-ep16-h200.json"}) {
    auto doc = ReadJsonFile(DataPath(std::string("scenarios/wide-ep/") + f));
    ASSERT_TRUE(doc.ok()) << f;
    (*doc)["workload"]["num_requests"] = (*doc)["workload"]["concurrency"];
    (*doc)["workload"]["warmup_requests"] = 0;
    (*doc)["workload"]["output_tokens"]["value"] = 16;
    auto sc = ParseScenario(*doc, f);
    ASSERT_TRUE(sc.ok()) << sc.status().message();
    auto run = RunScenario(**sc, RunOptions{});
    ASSERT_TRUE(run.ok()) << run.status().message();
    EXPECT_GT(run->summary.output_throughput.value_or(0), 0) << f;
  }
}

// The summary lists every memory term per GPU, EPLB's redundant experts
// among them (the scenario's one redundant slot per EP rank), and the terms
// add up to the device; without redundant experts the term is absent.
TEST(WideEp, SummaryListsEveryMemoryTerm) {
  auto doc = ReadJsonFile(DataPath("scenarios/wide-ep/deepseek-r1-ep16-h200-2node.json"));
  ASSERT_TRUE(doc.ok());
  (*doc)["workload"]["num_requests"] = 4;
  (*doc)["workload"]["warmup_requests"] = 0;
  (*doc)["workload"]["output_tokens"]["value"] = 4;
  auto sc = ParseScenario(*doc, "ep16.json");
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  auto run = RunScenario(**sc, RunOptions{});
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_FALSE(run->summary.pools.empty());
  const schema::Memory& m = *run->summary.pools[0].memory;
  ASSERT_TRUE(m.terms_bytes_per_gpu.has_value());
  const auto& terms = *m.terms_bytes_per_gpu;
  ASSERT_TRUE(terms.contains("eplb_redundant_expert_bytes"));
  EXPECT_GT(terms.at("eplb_redundant_expert_bytes"), 0);
  int64_t sum = 0;
  for (const auto& [key, bytes] : terms) sum += bytes;
  EXPECT_EQ(sum, *m.gpu_memory_bytes);
  (*doc)["deployment"]["expert_parallel"].erase("redundant_experts_per_rank");
  sc = ParseScenario(*doc, "ep16.json");
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  auto plain = RunScenario(**sc, RunOptions{});
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_FALSE(plain->summary.pools[0].memory->terms_bytes_per_gpu->contains(
      "eplb_redundant_expert_bytes"));
}

// The PD scenario's prefill (8 GPUs) and decode (32) pools sit in one
// NVL72 rack, so its "auto" link is NVLink, one prefill rank to the one
// decode rank that owns the request (MLA, decode attention TP 1). The same
// pools as HGX H200 boxes (prefill on one, decode over 4 on RDMA) cross the
// RDMA network, and NVLink set by hand there is refused, naming the field.
TEST(WideEp, PdKvLinkFollowsWhereThePoolsSit) {
  auto doc = ReadJsonFile(DataPath("scenarios/wide-ep/deepseek-r1-pd-gb200-nvl72.json"));
  ASSERT_TRUE(doc.ok());
  (*doc)["workload"]["concurrency"] = 64;
  (*doc)["workload"]["num_requests"] = 64;
  (*doc)["workload"]["warmup_requests"] = 0;
  (*doc)["workload"]["output_tokens"]["value"] = 8;
  auto run = [](const nlohmann::json& d) -> Result<RunResult> {
    auto sc = ParseScenario(d, "pd.json");
    if (!sc.ok()) return sc.status();
    return RunScenario(**sc, RunOptions{});
  };
  auto rack = run(*doc);
  ASSERT_TRUE(rack.ok()) << rack.status().message();
  const schema::Transfer& t = *rack->summary.transfer;
  EXPECT_EQ(t.link, "nvlink");
  EXPECT_EQ(t.placement, "both pools (40 GPUs) in one gb200-nvl72 NVLink domain");
  EXPECT_EQ(t.senders_per_request, 1);
  EXPECT_EQ(t.receivers_per_request, 1);
  EXPECT_EQ(t.link_bytes_per_token, 35136);  // FP8 latent + rope, 576 B x 61 layers

  nlohmann::json h200 = *doc;
  h200["hardware"] = "h200-sxm";
  h200["pd"]["prefill"]["nodes"] = 1;
  h200["pd"]["prefill"]["gpus_per_node"] = 8;
  h200["pd"]["prefill"].erase("node_link");
  h200["pd"]["decode"]["nodes"] = 4;
  h200["pd"]["decode"]["gpus_per_node"] = 8;
  h200["pd"]["decode"]["node_link"] = "rdma";
  auto boxes = run(h200);
  ASSERT_TRUE(boxes.ok()) << boxes.status().message();
  EXPECT_EQ(boxes->summary.transfer->link, "rdma");
  h200["pd"]["transfer"]["link"] = "nvlink";
  auto refused = run(h200);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "pd.json: /pd: transfer/link: nvlink needs both pools in one NVLink domain, but the "
            "decode pool spans 4 nodes joined by rdma; use \"rdma\" or \"auto\"");
}

}  // namespace
}  // namespace capplan::sim
