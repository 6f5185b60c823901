// The dry device sweep covers the new kernels (gemm_bf16, gemm_fp8,
// gemm_w4a16, moe_grouped_*) with valid measurement records, and the sweep
// shapes file is read strictly.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "kernels/gemm/sweep_shapes.h"
#include "kernels/harness/measurement.h"
#include "kernels/harness/run_suites.h"
#include "tests/test_util/expect_text.h"
#include "tests/test_util/temp_dir.h"

namespace capplan::kernels {
namespace {

using test_util::ExpectErrorContains;

TEST(GemmSuitesTest, DryRunCoversEveryGemmAndMoeKernel) {
  SuiteOptions opt;
  opt.dry_run = true;
  opt.quick = true;
  auto run = RunSuites({"gemm", "moe"}, opt, "test", "");
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::set<std::string> kernels;
  for (const MeasurementRecord& r : run->records) {
    kernels.insert(r.kernel);
    const bool moe = r.kernel.rfind("moe_", 0) == 0;
    EXPECT_EQ(r.op_class, moe ? "moe" : "dense_gemm") << r.kernel;
    EXPECT_EQ(r.check, "pass") << r.kernel << " " << r.variant;
    EXPECT_GT(r.bytes, 0);
    EXPECT_GT(r.flops, 0);
  }
  for (const char* k : {"gemm_bf16", "gemm_fp8", "gemm_w4a16", "moe_grouped_bf16",
                        "moe_grouped_fp8", "moe_grouped_w4a16"}) {
    EXPECT_TRUE(kernels.count(k)) << "missing " << k;
  }
  EXPECT_TRUE(ValidateMeasurementsJson(MeasurementsToJson(run->info, run->records), "dry").ok());
}

TEST(SweepShapesTest, ShippedFileLoadsWithModelShapes) {
  auto s = LoadDefaultSweepShapes();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->models.size(), 2u);
  EXPECT_EQ(s->models[0].moe.LocalExperts(), 48);  // Kimi K2.6: 384 / EP8
  EXPECT_EQ(s->models[1].moe.LocalExperts(), 32);  // GLM-5.2: 256 / EP8
  EXPECT_EQ(s->m_values.back(), 16384);
}

TEST(SweepShapesTest, UnknownKeyIsAUsageErrorNamingThePath) {
  const std::string path = test_util::TestTempPath("sweep_bad.json");
  std::ofstream(path) << R"({"format": "capplan.gemm_sweep.v1", "source": "x",
    "m_values": [1], "quick_m_values": [1], "dry_m_values": [1],
    "models": [{"name": "a", "int4_group": 32, "dense": [{"name": "d", "n": 64, "kk": 128}],
                "moe": {"hidden": 256, "intermediate": 128, "total_experts": 8, "ep": 2, "top_k": 2}}]})";
  auto s = LoadSweepShapes(path);
  ExpectErrorContains(s, StatusCode::kUsage, "/models/0/dense/0");
}

}  // namespace
}  // namespace capplan::kernels
