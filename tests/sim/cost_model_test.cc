// The roofline cost model on the shipped H200 profile, with hand-built ops
// (no model card needed).
#include "sim/cost_model.h"

#include <gtest/gtest.h>

#include "hw/op_pricing.h"
#include "models/card.h"
#include "models/ops.h"
#include "sim/step_pricer.h"

namespace capplan::sim {
namespace {

class CostModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = hw::LoadHardwareProfile("h200-sxm");
    ASSERT_TRUE(p.ok()) << p.status().message();
    prof_ = *p;
    auto m = MakeCostModel("roofline", prof_);
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::move(*m);
  }
  StepCost Price(const models::Op& op, StepContext ctx = {}) {
    return model_->PriceOps({op}, ctx, &warnings_);
  }
  static models::Op Gemm(int64_t m, int64_t n, int64_t k, models::Dtype w, models::Dtype c) {
    models::Op op;
    op.kind = models::OpKind::kGemm;
    op.op_class = models::OpClass::kDenseGemm;
    op.name = "test.gemm";
    op.m = m, op.n = n, op.k = k;
    op.flops = 2.0 * m * n * k;
    op.bytes = n * k * (w == models::Dtype::kInt4 ? 0.5 : w == models::Dtype::kFp8E4m3 ? 1.0 : 2.0);
    op.weight_dtype = w;
    op.compute_dtype = c;
    return op;
  }
  hw::HardwareProfile prof_;
  std::unique_ptr<CostModel> model_;
  std::set<std::string> warnings_;
};

TEST_F(CostModelTest, ProfileCarriesProvenanceForEveryParameter) {
  EXPECT_TRUE(prof_.has_cost_model);
  EXPECT_EQ(prof_.gpu_memory_bytes, 150754820096);
  EXPECT_DOUBLE_EQ(prof_.hbm_bytes_per_s, 4.3e12);
  EXPECT_DOUBLE_EQ(prof_.fp8_flops_per_s, 2 * prof_.bf16_flops_per_s);
  EXPECT_GE(prof_.provenance.size(), 20u);
  for (const auto& [k, v] : prof_.provenance) {
    EXPECT_FALSE(v.source.empty()) << k;
  }
  // Fitted by capplan calibrate --public (calibrate/step_fit.h).
  EXPECT_EQ(prof_.provenance.at("collectives.all_reduce.latency_s").kind, "fitted");
  EXPECT_EQ(prof_.efficiency.size(), hw::EfficiencyClasses().size());
}

TEST_F(CostModelTest, MemoryBoundOpIsBytesOverBandwidthTimesEfficiency) {
  models::Op op;
  op.kind = models::OpKind::kElementwise;
  op.op_class = models::OpClass::kElementwise;
  op.bytes = 1e9;
  op.flops = 1e6;
  op.m = 1000;
  op.count = 3;
  const auto& eff = prof_.efficiency.at("elementwise").memory;
  const StepCost c = Price(op);
  EXPECT_NEAR(c.class_seconds[static_cast<int>(models::OpClass::kElementwise)],
              3 * 1e9 / (4.3e12 * eff.At(1e9)), 1e-12);
  EXPECT_GT(c.bound_seconds[static_cast<int>(Bound::kMemory)], 0);
  EXPECT_EQ(c.bound_seconds[static_cast<int>(Bound::kCompute)], 0);
}

TEST_F(CostModelTest, Fp8GemmRunsAtTheFp8RateAndInt4AtTheBf16Rate) {
  const int cls = static_cast<int>(models::OpClass::kDenseGemm);
  const double bf16 =
      Price(Gemm(8192, 8192, 8192, models::Dtype::kBf16, models::Dtype::kBf16)).class_seconds[cls];
  const double fp8 = Price(Gemm(8192, 8192, 8192, models::Dtype::kFp8E4m3, models::Dtype::kFp8E4m3))
                         .class_seconds[cls];
  const double int4 =
      Price(Gemm(8192, 8192, 8192, models::Dtype::kInt4, models::Dtype::kBf16)).class_seconds[cls];
  const auto& e = prof_.efficiency;
  const double m = 8192;
  EXPECT_NEAR(bf16, 2.0 * m * m * m / (989.5e12 * e.at("gemm_bf16").compute.At(m)), 1e-9);
  EXPECT_NEAR(fp8, 2.0 * m * m * m / (1979e12 * e.at("gemm_fp8").compute.At(m)), 1e-9);
  EXPECT_NEAR(int4,
              2.0 * m * m * m / (989.5e12 * e.at("gemm_int4").compute.At(m)) *
                  (1 + prof_.int4_dequant_compute_overhead),
              1e-9);
  EXPECT_LT(fp8, bf16);   // prefill: FP8 beats BF16 ...
  EXPECT_LT(fp8, int4);   // ... and W4A16 (16-bit MMAs plus dequant work)
}

TEST_F(CostModelTest, DecodeGemmIsMemoryBoundAndInt4MovesFewerBytes) {
  const int cls = static_cast<int>(models::OpClass::kDenseGemm);
  const double fp8 = Price(Gemm(8, 7168, 18432, models::Dtype::kFp8E4m3, models::Dtype::kFp8E4m3))
                         .class_seconds[cls];
  const double int4 =
      Price(Gemm(8, 7168, 18432, models::Dtype::kInt4, models::Dtype::kBf16)).class_seconds[cls];
  EXPECT_LT(int4, fp8);
}

TEST_F(CostModelTest, AllReduceIsLatencyPlusBusBandwidth) {
  models::Op op;
  op.kind = models::OpKind::kAllReduce;
  op.op_class = models::OpClass::kCommunication;
  op.participants = 8;
  op.message_bytes = 1 << 20;
  const StepCost c = Price(op);
  EXPECT_NEAR(c.class_seconds[static_cast<int>(models::OpClass::kCommunication)],
              prof_.all_reduce.latency_s +
                  (1 << 20) * 2.0 * 7 / 8 / prof_.all_reduce.bus_bandwidth_bytes_per_s,
              1e-12);
  op.participants = 1;  // no TP, no collective
  EXPECT_EQ(Price(op).class_seconds[static_cast<int>(models::OpClass::kCommunication)], 0);
}

TEST_F(CostModelTest, NvlsAllReduceUsesItsOwnBusBandwidth) {
  ASSERT_GT(prof_.all_reduce.nvls_bus_bandwidth_bytes_per_s,
            prof_.all_reduce.bus_bandwidth_bytes_per_s);
  models::Op op;
  op.kind = models::OpKind::kAllReduce;
  op.op_class = models::OpClass::kCommunication;
  op.participants = 8;
  op.message_bytes = 1 << 28;
  StepContext nvls;
  nvls.nvls = true;
  const int comm = static_cast<int>(models::OpClass::kCommunication);
  EXPECT_NEAR(Price(op, nvls).class_seconds[comm],
              prof_.all_reduce.latency_s +
                  (1 << 28) * 2.0 * 7 / 8 / prof_.all_reduce.nvls_bus_bandwidth_bytes_per_s,
              1e-12);
  EXPECT_LT(Price(op, nvls).class_seconds[comm], Price(op).class_seconds[comm]);
  op.kind = models::OpKind::kAllGather;  // NVLS is an all-reduce algorithm here
  EXPECT_EQ(Price(op, nvls).class_seconds[comm], Price(op).class_seconds[comm]);
}

TEST_F(CostModelTest, CudaGraphsCutLaunchOverheadAndOverlapHidesCpu) {
  models::Op op = Gemm(1, 1024, 1024, models::Dtype::kBf16, models::Dtype::kBf16);
  op.count = 500;
  StepContext eager, graph;
  eager.cpu_schedule_s = graph.cpu_schedule_s = 1e-3;
  graph.cuda_graph = true;
  const int oh = static_cast<int>(models::OpClass::kOverhead);
  const double e = Price(op, eager).class_seconds[oh];
  const double g = Price(op, graph).class_seconds[oh];
  EXPECT_NEAR(e - 1e-3, 500 * prof_.kernel_launch_s, 1e-12);
  EXPECT_NEAR(g - 1e-3, prof_.graph_launch_s + 500 * prof_.graph_node_s, 1e-12);
  EXPECT_LT(g, e);
  StepContext overlap;
  overlap.overlap_schedule = true;
  overlap.cpu_schedule_s = 1e-3;
  models::Op big =
      Gemm(65536, 8192, 8192, models::Dtype::kBf16, models::Dtype::kBf16);  // ~11 ms of GPU time
  const StepCost c = Price(big, overlap);
  EXPECT_NEAR(c.class_seconds[oh], prof_.kernel_launch_s, 1e-12);  // CPU fully hidden
}

TEST_F(CostModelTest, EngineHostCostIsPaidEvenWhenSchedulingOverlaps) {
  models::Op big = Gemm(65536, 8192, 8192, models::Dtype::kBf16, models::Dtype::kBf16);
  StepContext overlap;
  overlap.overlap_schedule = true;
  overlap.cpu_schedule_s = 1e-3;
  const double without = Price(big, overlap).seconds;
  overlap.host_s = 4e-4;
  const StepCost c = Price(big, overlap);
  EXPECT_NEAR(c.seconds - without, 4e-4, 1e-12);
  EXPECT_NEAR(c.class_seconds[static_cast<int>(models::OpClass::kOverhead)],
              prof_.kernel_launch_s + 4e-4, 1e-12);
}

TEST_F(CostModelTest, ShapesOutsideTheValidRangeWarn) {
  models::Op op =
      Gemm(1 << 20, 128, 128, models::Dtype::kBf16, models::Dtype::kBf16);  // M above 65536
  Price(op);
  ASSERT_FALSE(warnings_.empty());
  EXPECT_NE(warnings_.begin()->find("outside the profile's valid range"), std::string::npos);
}

TEST_F(CostModelTest, UnknownCostModelSuggests) {
  auto m = MakeCostModel("rooflne", prof_);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("did you mean 'roofline'"), std::string::npos);
}

// A trace brings a new prompt length almost every step: the memo of
// signatures with prefill starts over at its bound instead of growing, and
// a signature priced again after that costs the same.
TEST_F(CostModelTest, PrefillMemoStaysBoundedAndPricesTheSame) {
  auto card = models::LoadModelCard("llama-3.1-8b");
  ASSERT_TRUE(card.ok()) << card.status().message();
  models::ParallelLayout layout;
  layout.gpus = 1;
  layout.tp = 1;
  auto sharded = models::ShardModel(*card, layout, models::PrecisionChoice{});
  ASSERT_TRUE(sharded.ok()) << sharded.status().message();
  ModelPricerOptions opt;
  opt.cuda_graph_max_bs = 256;
  opt.page_size = 16;
  ModelStepPricer pricer(&*sharded, model_.get(), opt);
  StepWork first;
  first.prefill = {{100, 0}};
  first.decode_n = 4;
  first.decode_ctx_sum = 4000;
  const double first_s = pricer.Price(first).seconds;
  const int64_t n = static_cast<int64_t>(ModelStepPricer::kMaxPrefillMemo) + 10;
  for (int64_t i = 1; i <= n; ++i) {
    StepWork w = first;
    w.prefill = {{100 + i, 0}};
    pricer.Price(w);
    ASSERT_LE(pricer.prefill_memo_entries(), ModelStepPricer::kMaxPrefillMemo);
  }
  EXPECT_LT(pricer.prefill_memo_entries(), 100u);  // it started over
  EXPECT_EQ(pricer.Price(first).seconds, first_s);
  EXPECT_EQ(pricer.misses(), n + 2);
}

TEST(CostModelProfile, BootstrapProfileWithoutCostModelIsRefused) {
  nlohmann::json doc = nlohmann::json::parse(R"({"name": "x", "gpu": "y", "memory": {"gpu_memory_bytes":
      {"value": 1, "provenance": {"kind": "default", "source": "s"}}}})");
  auto p = hw::ParseHardwareProfile(doc, "x.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_FALSE(p->has_cost_model);
  EXPECT_EQ(MakeCostModel("roofline", *p).status().code(), StatusCode::kUsage);
  doc["computee"] = 1;
  auto bad = hw::ParseHardwareProfile(doc, "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("computee"), std::string::npos);
}

}  // namespace
}  // namespace capplan::sim
