// The shipped hardware profiles: both load with the full cost model, carry
// the same parameters each with a provenance, and the H100 profile holds
// its datasheet figures; where it has no H100 source it keeps the H200
// value and says so.
#include "hw/profile.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/data_path.h"

namespace capplan::calibrate {
namespace {

std::set<std::string> Keys(const hw::HardwareProfile& p) {
  std::set<std::string> k;
  for (const auto& [path, prov] : p.provenance) k.insert(path);
  return k;
}

TEST(ShippedProfiles, BothLoadWithTheSameParameters) {
  const std::vector<std::string> expected = {"b200-sxm",    "b300-sxm", "gb200-nvl72",
                                              "gb300-nvl72", "h100-sxm", "h200-sxm"};
  EXPECT_EQ(hw::ShippedProfileNames(), expected);
  auto h100 = hw::LoadHardwareProfile("h100-sxm");
  ASSERT_TRUE(h100.ok()) << h100.status().message();
  auto h200 = hw::LoadHardwareProfile("h200-sxm");
  ASSERT_TRUE(h200.ok()) << h200.status().message();
  EXPECT_EQ(h100->name, "h100-sxm");
  EXPECT_TRUE(h100->has_cost_model);
  EXPECT_EQ(Keys(*h100), Keys(*h200));
  EXPECT_GT(h100->provenance.size(), 20u);
  for (const auto& [path, prov] : h100->provenance) {
    EXPECT_FALSE(prov.source.empty()) << path;
    EXPECT_FALSE(prov.kind.empty()) << path;
  }
  for (const auto& [cls, eff] : h200->efficiency) {
    ASSERT_TRUE(h100->efficiency.count(cls)) << cls;
  }
}

TEST(ShippedProfiles, H100DatasheetAndMemory) {
  auto p = hw::LoadHardwareProfile("h100-sxm");
  ASSERT_TRUE(p.ok()) << p.status().message();
  // nvidia-smi total for H100 80GB HBM3: 81,559 MiB.
  EXPECT_EQ(p->gpu_memory_bytes, 81559LL * 1024 * 1024);
  EXPECT_EQ(p->gpu_memory_bytes, 85520809984LL);
  EXPECT_DOUBLE_EQ(p->hbm_spec_bytes_per_s, 3.35e12);
  EXPECT_DOUBLE_EQ(p->hbm_bytes_per_s, 2.90e12);  // Azure ND H100 v5 STREAM copy
  EXPECT_DOUBLE_EQ(p->bf16_flops_per_s, 989.5e12);
  EXPECT_DOUBLE_EQ(p->fp8_flops_per_s, 1979e12);
  EXPECT_DOUBLE_EQ(p->fp32_flops_per_s, 67e12);
  EXPECT_DOUBLE_EQ(p->nvlink_bytes_per_s, 450e9);
  EXPECT_EQ(p->provenance.at("memory.hbm_bandwidth_spec_bytes_per_s").kind, "datasheet");
  EXPECT_EQ(p->provenance.at("compute.bf16_flops_per_s").kind, "datasheet");
  // H100-specific anchors in the base (MAMF 794.5 BF16 and 1,403 FP8
  // TFLOPS); the shipped FP8 curve is fitted from the public records.
  auto base = hw::LoadHardwareProfile(DataPath("calibrate/profiles/base/h100-sxm.json"));
  ASSERT_TRUE(base.ok()) << base.status().message();
  EXPECT_DOUBLE_EQ(base->efficiency.at("gemm_bf16").compute.max, 0.80);
  EXPECT_DOUBLE_EQ(base->efficiency.at("gemm_fp8").compute.max, 0.71);
  EXPECT_DOUBLE_EQ(p->efficiency.at("gemm_bf16").compute.max, 0.80);
  EXPECT_EQ(p->efficiency.at("gemm_fp8").compute.provenance.kind, "fitted");
}

TEST(ShippedProfiles, H100KeepsH200ValuesWhereItSaysSo) {
  auto h100 = hw::LoadHardwareProfile("h100-sxm");
  auto h200 = hw::LoadHardwareProfile("h200-sxm");
  ASSERT_TRUE(h100.ok() && h200.ok());
  // Scalars whose provenance says "no H100 source", or that the step fit
  // fitted jointly for both, equal the H200 value.
  const std::pair<const char*, double hw::HardwareProfile::*> scalars[] = {
      {"overheads.kernel_launch_s", &hw::HardwareProfile::kernel_launch_s},
      {"overheads.graph_node_s", &hw::HardwareProfile::graph_node_s},
      {"overheads.graph_launch_s", &hw::HardwareProfile::graph_launch_s},
      {"int4_dequant_compute_overhead", &hw::HardwareProfile::int4_dequant_compute_overhead},
  };
  int kept = 0;
  for (const auto& [path, field] : scalars) {
    ASSERT_TRUE(h100->provenance.count(path)) << path;
    const std::string& src = h100->provenance.at(path).source;
    EXPECT_TRUE(src.find("no H100 source") != std::string::npos ||
                src.find("jointly for every Hopper profile") != std::string::npos)
        << path << ": " << src;
    EXPECT_DOUBLE_EQ((*h100).*field, (*h200).*field) << path;
    ++kept;
  }
  EXPECT_EQ(kept, 4);
  // Curves: every curve whose provenance says "no H100 source" has the
  // H200 curve's max and half.
  int curves = 0;
  for (const auto& [cls, eff] : h100->efficiency) {
    for (const auto* pair : {&eff.compute, &eff.memory}) {
      const bool memory = pair == &eff.memory;
      const hw::EfficiencyCurve& h2 =
          memory ? h200->efficiency.at(cls).memory : h200->efficiency.at(cls).compute;
      if (pair->provenance.source.find("no H100 source") == std::string::npos) continue;
      if (pair->provenance.source.starts_with("max:")) continue;  // only half kept
      EXPECT_DOUBLE_EQ(pair->max, h2.max) << cls;
      EXPECT_DOUBLE_EQ(pair->half, h2.half) << cls;
      ++curves;
    }
  }
  EXPECT_GE(curves, 3);
}

}  // namespace
}  // namespace capplan::calibrate
