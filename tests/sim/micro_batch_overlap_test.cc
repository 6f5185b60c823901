// Two-batch overlap: a hand-computed timeline through a fake cost model
// whose ops cost known seconds (an all-to-all hidden fully under the other
// micro-batch's compute, and partly when it is longer), the engines' split
// and thresholds as their profiles state them, a TBO scenario that runs
// faster than the same deployment without it, and the refusals.
#include "sim/micro_batch_overlap.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "common/data_path.h"
#include "common/json_util.h"
#include "sim/op_provenance.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "tests/test_util/expect_text.h"

namespace capplan::sim {
namespace {

// Every op costs op.flops seconds; collectives are communication-bound and
// priced by the collective model, the rest compute; no launch cost.
class FakeSecondsModel : public CostModel {
 public:
  std::string name() const override { return "fake_seconds"; }
  StepCost PriceOps(const std::vector<models::Op>& ops, const StepContext& ctx,
                    std::set<std::string>*) const override {
    StepCost c;
    double gpu = 0;
    for (const models::Op& op : ops) {
      const bool comm = op.kind == models::OpKind::kAllToAll;
      const double t = op.flops * static_cast<double>(op.count);
      gpu += t;
      c.class_seconds[static_cast<int>(op.op_class)] += t;
      c.bound_seconds[static_cast<int>(comm ? Bound::kCommunication : Bound::kCompute)] += t;
      c.provenance_seconds[static_cast<int>(comm ? OpProvenance::kCollective
                                                 : OpProvenance::kMeasured)] += t;
    }
    const HostTime h = PriceHost(ctx, gpu);
    const double overhead = h.step - gpu;
    c.class_seconds[static_cast<int>(models::OpClass::kOverhead)] += overhead;
    c.provenance_seconds[static_cast<int>(OpProvenance::kHost)] += overhead;
    c.bound_seconds[static_cast<int>(Bound::kOverhead)] += overhead;
    c.seconds = h.step;
    return c;
  }
};

// One micro-batch: `compute` ms of expert GEMMs and `comm` ms of all-to-all.
std::vector<models::Op> MicroBatch(double compute_ms, double comm_ms) {
  models::Op gemm;
  gemm.kind = models::OpKind::kGroupedGemm;
  gemm.op_class = models::OpClass::kMoe;
  gemm.flops = compute_ms * 1e-3;
  models::Op a2a;
  a2a.kind = models::OpKind::kAllToAll;
  a2a.op_class = models::OpClass::kCommunication;
  a2a.flops = comm_ms * 1e-3;
  return {gemm, a2a};
}

double Sum(const auto& seconds) { return std::accumulate(seconds.begin(), seconds.end(), 0.0); }

// Prices two micro-batches through the fake model and combines them, with
// 0.5 ms of engine host time per step.
StepCost Overlap(double compute_a, double comm_a, double compute_b, double comm_b) {
  const FakeSecondsModel model;
  StepContext ctx;
  ctx.host_s = 0.5e-3;
  const StepCost a = model.PriceOps(MicroBatch(compute_a, comm_a), ctx, nullptr);
  const StepCost b = model.PriceOps(MicroBatch(compute_b, comm_b), ctx, nullptr);
  return CombineMicroBatches(a, comm_a * 1e-3, b, comm_b * 1e-3, ctx);
}

void ExpectConsistent(const StepCost& c) {
  EXPECT_NEAR(Sum(c.class_seconds), c.seconds, 1e-12);
  EXPECT_NEAR(Sum(c.bound_seconds), c.seconds, 1e-12);
  EXPECT_NEAR(Sum(c.provenance_seconds), c.seconds, 1e-12);
}

constexpr int kComm = static_cast<int>(models::OpClass::kCommunication);
constexpr int kOverhead = static_cast<int>(models::OpClass::kOverhead);

// Compute stream: a 3 ms, b 3 ms back to back (6 ms). Communication stream:
// b's 1 ms runs under a's compute, a's 1 ms under b's; each micro-batch's
// own chain is 4 ms. Step: 6 ms of GPU + 0.5 ms host, both all-to-alls
// hidden.
TEST(TboHiding, CommunicationShorterThanComputeIsHiddenFully) {
  const StepCost c = Overlap(3, 1, 3, 1);
  EXPECT_NEAR(c.seconds, 6.5e-3, 1e-12);
  EXPECT_NEAR(c.overlap_hidden_seconds, 2e-3, 1e-12);
  EXPECT_NEAR(c.class_seconds[kComm], 0, 1e-12);
  EXPECT_NEAR(c.class_seconds[kOverhead], 0.5e-3, 1e-12);  // the host once, not per micro-batch
  ExpectConsistent(c);
}

// Communication stream: 3 + 3 = 6 ms back to back; the compute (1 ms each)
// runs under it. Step: 6 ms of GPU; of the 6 ms of all-to-all, 2 ms are
// hidden (the serial step would take 8) and 4 ms stay in the step.
TEST(TboHiding, CommunicationLongerThanComputeIsHiddenPartly) {
  const StepCost c = Overlap(1, 3, 1, 3);
  EXPECT_NEAR(c.seconds, 6.5e-3, 1e-12);
  EXPECT_NEAR(c.overlap_hidden_seconds, 2e-3, 1e-12);
  EXPECT_NEAR(c.class_seconds[kComm], 4e-3, 1e-12);
  ExpectConsistent(c);
}

// Micro-batch a's own chain (3 ms compute, then 3 ms all-to-all) is longer
// than either stream (4 ms each): the fill bounds the step at 6 ms.
TEST(TboHiding, OneMicroBatchsChainBoundsTheStep) {
  EXPECT_DOUBLE_EQ(OverlappedSeconds({3, 3}, {1, 1}), 6);
  const StepCost c = Overlap(3, 3, 1, 1);
  EXPECT_NEAR(c.seconds, 6.5e-3, 1e-12);
  EXPECT_NEAR(c.overlap_hidden_seconds, 2e-3, 1e-12);
  ExpectConsistent(c);
}

const models::MicroBatchOverlapRule& RuleOf(const char* engine, const char* version) {
  auto r = models::ResolveEngine(engine, version);
  EXPECT_TRUE(r.ok());
  return r->profile->micro_batch_overlap;
}

TEST(TboSplit, BelowTheThresholdNoSplit) {
  const models::MicroBatchOverlapRule& v = RuleOf("vllm", "0.19.0");
  ASSERT_TRUE(v.present());
  StepWork w, a, b;
  w.decode_n = v.decode_token_threshold - 1;
  w.decode_ctx_sum = w.decode_n * 1000;
  EXPECT_FALSE(SplitForOverlap(w, 1, v.decode_token_threshold, v.prefill_token_threshold, &a, &b));
  w.decode_n = v.decode_token_threshold;
  w.decode_ctx_sum = w.decode_n * 1000;
  ASSERT_TRUE(SplitForOverlap(w, 1, v.decode_token_threshold, v.prefill_token_threshold, &a, &b));
  EXPECT_EQ(a.decode_n + b.decode_n, w.decode_n);
  EXPECT_EQ(a.decode_n, w.decode_n / 2);
  EXPECT_EQ(a.decode_ctx_sum, a.decode_n * 1000);
  EXPECT_EQ(a.decode_ctx_sum + b.decode_ctx_sum, w.decode_ctx_sum);
  // A step holding a prefill chunk uses the prefill threshold.
  StepWork p;
  p.prefill = {{v.prefill_token_threshold - 1, 0}};
  EXPECT_FALSE(SplitForOverlap(p, 1, v.decode_token_threshold, v.prefill_token_threshold, &a, &b));
}

// 12 decode rows and a 500-token chunk (512 tokens): the cut at 256 puts the
// decode rows and the chunk's first 244 tokens in a; b holds the other 256,
// attending to the 244 before them.
TEST(TboSplit, ChunkStraddlingTheCutIsSplitByTokens) {
  StepWork w, a, b;
  w.decode_n = 12;
  w.decode_ctx_sum = 12 * 3000;
  w.prefill = {{500, 100}};
  ASSERT_TRUE(SplitForOverlap(w, 1, 32, 512, &a, &b));
  EXPECT_EQ(a.decode_n, 12);
  ASSERT_EQ(a.prefill.size(), 1u);
  EXPECT_EQ(a.prefill[0].new_tokens, 244);
  EXPECT_EQ(a.prefill[0].cached_tokens, 100);
  EXPECT_EQ(b.decode_n, 0);
  ASSERT_EQ(b.prefill.size(), 1u);
  EXPECT_EQ(b.prefill[0].new_tokens, 256);
  EXPECT_EQ(b.prefill[0].cached_tokens, 344);
  // One decode row cannot split: a half would be empty.
  StepWork one;
  one.decode_n = 1;
  one.decode_ctx_sum = 10;
  EXPECT_FALSE(SplitForOverlap(one, 1, 2, 2, &a, &b));
}

nlohmann::json WideEp() {
  auto doc = ReadJsonFile(DataPath("scenarios/wide-ep/deepseek-r1-ep32-h200-rdma.json"));
  EXPECT_TRUE(doc.ok());
  nlohmann::json d = doc.ok() ? *doc : nlohmann::json::object();
  d["workload"]["num_requests"] = 2048;
  d["workload"]["warmup_requests"] = 0;
  d["workload"]["output_tokens"]["value"] = 64;
  return d;
}

Status ParseOnly(const nlohmann::json& doc) { return ParseScenario(doc, "tbo.json").status(); }

TEST(TboScenario, RefusalsNameTheFieldAndTheFix) {
  nlohmann::json doc = WideEp();
  doc["deployment"]["two_batch_overlap"] = true;
  EXPECT_TRUE(ParseOnly(doc).ok()) << ParseOnly(doc).message();
  nlohmann::json old = doc;
  old["deployment"]["engine_version"] = "0.4.6";
  Status s = ParseOnly(old);
  ASSERT_FALSE(s.ok());
  test_util::ExpectContains(
      s.message(),
      "tbo.json: /deployment/two_batch_overlap: sglang 0.4.6 has no two-batch overlap");
  nlohmann::json collective = doc;
  collective["deployment"]["expert_parallel"]["all_to_all"] = "collective";
  s = ParseOnly(collective);
  ASSERT_FALSE(s.ok());
  test_util::ExpectContains(s.message(),
                            "--enable-two-batch-overlap needs the DeepEP all-to-all: "
                            "set expert_parallel.all_to_all \"deepep\"");
  nlohmann::json no_ep = doc;
  no_ep["deployment"]["ep"] = 1;
  s = ParseOnly(no_ep);
  ASSERT_FALSE(s.ok());
  test_util::ExpectContains(s.message(), "set ep > 1");
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
}

// DeepSeek-R1 decode over 4 RDMA-joined nodes at 64 requests per rank: the
// all-to-all is about a quarter of the step's kernels, so hiding it outweighs
// what the micro-batches' half-size GEMMs lose.
TEST(TboScenario, WideEpDecodeRunsFasterWithOverlap) {
  double tpot[2] = {0, 0};
  for (int on = 0; on < 2; ++on) {
    nlohmann::json doc = WideEp();
    doc["deployment"]["two_batch_overlap"] = on == 1;
    auto sc = ParseScenario(doc, "tbo.json");
    ASSERT_TRUE(sc.ok()) << sc.status().message();
    auto run = RunScenario(**sc, RunOptions{});
    ASSERT_TRUE(run.ok()) << run.status().message();
    tpot[on] = run->summary.tpot.median.value_or(0);
    // The summary says which: a report compares the two by it.
    EXPECT_EQ(run->summary.pools.at(0).deployment.value("two_batch_overlap", false), on == 1);
  }
  EXPECT_LT(tpot[1], tpot[0]);
  EXPECT_GT(tpot[1], 0.8 * tpot[0]);
}

}  // namespace
}  // namespace capplan::sim
