// Fits: parameters used to generate noisy measurements are recovered, and
// leave-one-out errors match a hand computation.
#include "calibrate/fit.h"

#include <gtest/gtest.h>

#include <cmath>

#include "hw/profile.h"

namespace capplan::calibrate {
namespace {

// A local H200 measurement file's source block.
MeasurementSource H200Source(const std::string& path) {
  MeasurementSource src;
  src.path = path;
  src.gpu = "NVIDIA H200";
  src.driver = "580.1";
  src.cuda = "13.0";
  src.commit = "abc";
  src.date = "2026";
  return src;
}

TEST(CalibFit, PercentileInterpolates) {
  EXPECT_DOUBLE_EQ(Quantile({3, 1, 2}, 0.5), 2);
  EXPECT_NEAR(Quantile({1, 2, 3, 4}, 0.9), 3.7, 1e-12);
  EXPECT_DOUBLE_EQ(Quantile({}, 0.5), 0);
}

// Three memory-bound points on no common line: each LOO fit is the exact line
// through the other two (two points, two parameters), so the errors are
// computable by hand: t(1MB)=10us, t(2MB)=15us, t(4MB)=30us.
//   drop 1MB: line through (2,15),(4,30) -> 7.5 at 1MB: |7.5-10|/10 = 0.25
//   drop 2MB: line through (1,10),(4,30) -> 16.667:      1.667/15 = 0.1111
//   drop 4MB: line through (1,10),(2,15) -> 25:              5/30 = 0.1667
TEST(CalibFit, LeaveOneOutOnHandMadeSet) {
  auto prof = hw::LoadHardwareProfile("h200-sxm");
  ASSERT_TRUE(prof.ok()) << prof.status().message();
  std::vector<FitPoint> pts;
  for (auto [mb, us] : {std::pair{1.0, 10.0}, {2.0, 15.0}, {4.0, 30.0}}) {
    FitPoint p;
    p.bytes = mb * 1e6;
    p.t_s = us * 1e-6;
    pts.push_back(p);
  }
  const ClassFit f =
      FitClass("elementwise", pts, prof->efficiency.at("elementwise"), prof->hbm_bytes_per_s);
  ASSERT_EQ(f.loo_rel_err.size(), 3u);
  EXPECT_NEAR(f.loo_rel_err[0], 0.25, 1e-6);
  EXPECT_NEAR(f.loo_rel_err[1], 1.0 / 9, 1e-6);
  EXPECT_NEAR(f.loo_rel_err[2], 1.0 / 6, 1e-6);
  EXPECT_NEAR(f.loo_median, 1.0 / 6, 1e-6);
  EXPECT_NEAR(f.loo_p90, 1.0 / 6 + 0.8 * (0.25 - 1.0 / 6), 1e-6);
  EXPECT_TRUE(f.memory.fitted);
  EXPECT_FALSE(f.compute.fitted);  // no flops: nothing compute-bound
  EXPECT_DOUBLE_EQ(f.memory.lo, 1e6);
  EXPECT_DOUBLE_EQ(f.memory.hi, 4e6);
}

// Deterministic noise in [-amp, amp].
double Noise(uint64_t* s, double amp) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return amp * (2.0 * ((*s >> 11) * (1.0 / 9007199254740992.0)) - 1.0);
}

TEST(CalibFit, RecoversKnownGemmCurvesFromNoisyMeasurements) {
  auto prof = hw::LoadHardwareProfile("h200-sxm");
  ASSERT_TRUE(prof.ok()) << prof.status().message();
  const double hbm = prof->hbm_bytes_per_s, rate = prof->bf16_flops_per_s;
  hw::EfficiencyCurve tc = prof->efficiency.at("gemm_bf16").compute;
  hw::EfficiencyCurve tm = prof->efficiency.at("gemm_bf16").memory;
  tc.max = 0.70, tc.half = 100;  // truth, different from the base profile's
  tm.max = 0.85, tm.half = 3e6;
  MeasurementSet set;
  set.sources.push_back(H200Source("synthetic.json"));
  uint64_t seed = 42;
  for (int nk : {256, 1024, 4096}) {
    for (int m = 1; m <= 16384; m *= 2) {
      MeasuredKernel k;
      k.kernel = "gemm_bf16";
      k.op = MeasuredOp::kDenseGemm;
      k.dtype = k.weight_dtype = "bf16";
      k.shape = {{"m", m}, {"n", nk}, {"k", nk}};
      k.flops = 2.0 * m * nk * nk;
      k.bytes = 2.0 * (1.0 * m * nk + 1.0 * nk * nk + 1.0 * m * nk);
      FitPoint p;
      p.flops = k.flops, p.bytes = k.bytes, p.rate = rate, p.x = m;
      k.median_us = PredictSeconds(p, tc, tm, hbm) * 1e6 * (1 + Noise(&seed, 0.02));
      k.index = static_cast<int>(set.records.size());
      set.records.push_back(k);
    }
  }
  auto fit = FitMeasurements(set, *prof);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  ASSERT_EQ(fit->classes.count("gemm_bf16"), 1u);
  const ClassFit& c = fit->classes.at("gemm_bf16");
  ASSERT_TRUE(c.compute.fitted && c.memory.fitted);
  EXPECT_NEAR(c.compute.max, 0.70, 0.70 * 0.03);
  EXPECT_NEAR(c.compute.half, 100, 100 * 0.25);
  EXPECT_NEAR(c.memory.max, 0.85, 0.85 * 0.03);
  EXPECT_NEAR(c.memory.half, 3e6, 3e6 * 0.25);
  // Noise is +-2%: a correct model predicts held-out points about that well.
  EXPECT_LT(c.loo_median, 0.03);
  EXPECT_LT(c.loo_p90, 0.06);
  EXPECT_EQ(c.loo_rel_err.size(), set.records.size());
  EXPECT_GT(c.compute.lo, 1);  // small M is memory-bound, not in the compute range
  EXPECT_EQ(c.compute.hi, 16384);
}

TEST(CalibFit, WrongModelShowsLargeLooError) {
  // Times that grow with the square of bytes cannot be fitted by a saturating
  // bandwidth curve: the LOO error must say so (the check can fail).
  auto prof = hw::LoadHardwareProfile("h200-sxm");
  ASSERT_TRUE(prof.ok());
  std::vector<FitPoint> pts;
  for (double mb = 1; mb <= 256; mb *= 2) {
    FitPoint p;
    p.bytes = mb * 1e6;
    p.t_s = 1e-6 * mb * mb;
    pts.push_back(p);
  }
  const ClassFit f =
      FitClass("elementwise", pts, prof->efficiency.at("elementwise"), prof->hbm_bytes_per_s);
  EXPECT_GT(f.loo_median, 0.3);
}

TEST(CalibFit, OverheadsFromLaunchRecords) {
  auto prof = hw::LoadHardwareProfile("h200-sxm");
  ASSERT_TRUE(prof.ok());
  MeasurementSet set;
  set.sources.push_back(H200Source("o.json"));
  for (double us : {3.0, 4.0, 5.0}) {
    MeasuredKernel k;
    k.kernel = "kernel_launch";
    k.op = MeasuredOp::kKernelLaunch;
    k.median_us = us;
    set.records.push_back(k);
  }
  for (int nodes : {10, 100, 1000}) {
    MeasuredKernel k;
    k.kernel = "graph_launch";
    k.op = MeasuredOp::kGraphLaunch;
    k.shape = {{"nodes", nodes}};
    k.median_us = 12.0 + 0.5 * nodes;
    set.records.push_back(k);
  }
  auto fit = FitMeasurements(set, *prof);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_NEAR(fit->overheads.kernel_launch_s, 4e-6, 1e-12);
  EXPECT_NEAR(fit->overheads.graph_launch_s, 12e-6, 1e-10);
  EXPECT_NEAR(fit->overheads.graph_node_s, 0.5e-6, 1e-12);
}

// FP8 experts multiply at the FP8 rate, and the simulator prices fp8 weights
// there (hw/formats.json); a record labelled as BF16 math would fit a table
// the simulator reads against twice the peak it was fitted on.
TEST(CalibFit, GemmRecordsMustMultiplyAtTheRateTheSimulatorPrices) {
  auto prof = hw::LoadHardwareProfile("h200-sxm");
  ASSERT_TRUE(prof.ok()) << prof.status().message();
  MeasurementSet set;
  set.sources.push_back(H200Source("moe.json"));
  for (const char* math : {"bf16", "fp8"}) {
    for (int rows : {64, 4096}) {
      MeasuredKernel k;
      k.kernel = "fused_moe";
      k.op = MeasuredOp::kMoe;
      k.dtype = math;
      k.weight_dtype = "fp8";
      k.shape = {{"rows", rows}, {"touched_experts", 32}};
      k.flops = 2.0 * rows * 3 * 7168 * 2048;
      k.bytes = 32.0 * 3 * 7168 * 2048;
      k.median_us = 100;
      k.index = static_cast<int>(set.records.size());
      set.records.push_back(k);
    }
  }
  auto fit = FitMeasurements(set, *prof);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  ASSERT_EQ(fit->unused.size(), 2u);
  for (const auto& [index, why] : fit->unused) {
    EXPECT_EQ(set.records[index].dtype, "bf16");
    EXPECT_NE(why.find("multiplies in bf16"), std::string::npos) << why;
    EXPECT_NE(why.find("fp8 rate"), std::string::npos) << why;
  }
}

}  // namespace
}  // namespace capplan::calibrate
