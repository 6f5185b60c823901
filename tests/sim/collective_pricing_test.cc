// Each collective op kind is priced by its own table of the profile (and
// only collectives are): with every table given a distinct latency and bus
// bandwidth, a kind priced by another's table shows.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "hw/op_pricing.h"
#include "models/ops.h"
#include "sim/cost_model.h"

namespace capplan::sim {
namespace {

constexpr int kParts = 8;
constexpr double kBytes = 1 << 24;

class CollectivePricingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = hw::LoadHardwareProfile("h200-sxm");
    ASSERT_TRUE(p.ok()) << p.status().message();
    prof_ = *p;
    prof_.all_reduce = {1e-6, 100e9, 0};
    prof_.all_gather = {2e-6, 200e9, 0};
    prof_.reduce_scatter = {3e-6, 300e9, 0};
    prof_.all_to_all = {4e-6, 400e9, 0};
    auto m = MakeCostModel("roofline", prof_);
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::move(*m);
  }

  static models::Op Collective(models::OpKind kind) {
    models::Op op;
    op.kind = kind;
    op.op_class = models::OpClass::kCommunication;
    op.name = std::string("test.") + models::OpKindName(kind);
    op.participants = kParts;
    op.message_bytes = kBytes;
    return op;
  }

  // latency + bytes * (moved fraction) / bus bandwidth; an all-reduce moves
  // each byte twice.
  static double Expected(const hw::CollectiveModel& m, bool all_reduce) {
    const double frac = (kParts - 1.0) / kParts;
    return m.latency_s + kBytes * (all_reduce ? 2 * frac : frac) / m.bus_bandwidth_bytes_per_s;
  }

  double Seconds(const models::Op& op) const {
    std::set<std::string> warnings;
    return model_->PriceOps({op}, StepContext{}, &warnings)
        .class_seconds[static_cast<int>(models::OpClass::kCommunication)];
  }

  hw::HardwareProfile prof_;
  std::unique_ptr<CostModel> model_;
};

TEST_F(CollectivePricingTest, EachCollectiveIsPricedByItsOwnTable) {
  const struct {
    models::OpKind kind;
    const hw::CollectiveModel* table;
  } cases[] = {
      {models::OpKind::kAllReduce, &prof_.all_reduce},
      {models::OpKind::kAllGather, &prof_.all_gather},
      {models::OpKind::kReduceScatter, &prof_.reduce_scatter},
      {models::OpKind::kAllToAll, &prof_.all_to_all},
  };
  for (const auto& c : cases) {
    const models::Op op = Collective(c.kind);
    const double want = Expected(*c.table, c.kind == models::OpKind::kAllReduce);
    EXPECT_NEAR(Seconds(op), want, want * 1e-12) << op.name;
    const std::vector<OpPrice> explained = model_->ExplainOps({op}, StepContext{});
    ASSERT_EQ(explained.size(), 1u);
    EXPECT_NEAR(explained[0].seconds, want, want * 1e-12) << op.name;
    EXPECT_EQ(explained[0].bound, Bound::kCommunication) << op.name;
    EXPECT_EQ(explained[0].table, "collectives") << op.name;
  }
}

// An op that is not a collective is priced through its family, never a
// collective table, even when it carries a message size.
TEST_F(CollectivePricingTest, OtherKindsAreNotPricedAsCollectives) {
  models::Op op = Collective(models::OpKind::kElementwise);
  op.op_class = models::OpClass::kElementwise;
  op.m = 64;
  op.bytes = 1e6;
  const std::vector<OpPrice> explained = model_->ExplainOps({op}, StepContext{});
  ASSERT_EQ(explained.size(), 1u);
  EXPECT_NE(explained[0].bound, Bound::kCommunication);
  EXPECT_NE(explained[0].table, "collectives");
}

// Each math rate reads its own peak of the profile.
TEST_F(CollectivePricingTest, EachMathRateReadsItsOwnPeak) {
  hw::OpPricingInput in;
  in.family = hw::OpFamily::kDenseGemm;
  in.weights = in.compute = hw::FormatId::kBf16;
  EXPECT_EQ(hw::PriceOp(in, prof_).peak_flops_per_s, prof_.bf16_flops_per_s);
  in.weights = in.compute = hw::FormatId::kFp8E4m3;
  EXPECT_EQ(hw::PriceOp(in, prof_).peak_flops_per_s, prof_.fp8_flops_per_s);
  in.weights = in.compute = hw::FormatId::kFp32;
  EXPECT_EQ(hw::PriceOp(in, prof_).peak_flops_per_s, prof_.fp32_flops_per_s);
}

}  // namespace
}  // namespace capplan::sim
