#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <vector>

#include "common/data_path.h"
#include "common/json_util.h"
#include "kernels/harness/check.h"
#include "kernels/harness/measurement.h"
#include "kernels/harness/napkin.h"
#include "kernels/harness/suite.h"
#include "kernels/harness/timing.h"
#include "tests/test_util/temp_dir.h"

namespace capplan::kernels {
namespace {

TEST(Check, PassesWithinToleranceAndReportsMismatches) {
  std::vector<float> ref = {1.0f, -2.0f, 100.0f, 0.0f};
  std::vector<float> out = {1.0005f, -2.0f, 100.05f, 0.0009f};
  EXPECT_TRUE(Check(out, ref, 1e-3, 1e-3).pass);
  out[2] = 101.0f;  // |err| = 1 > 1e-3 + 0.1
  const CheckResult r = Check(out, ref, 1e-3, 1e-3);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_NE(r.report.find("[2]"), std::string::npos) << r.report;
}

TEST(Check, PoisonedOutputIsUnwrittenAndFails) {
  std::vector<float> ref = {1.0f, 2.0f, 3.0f};
  std::vector<float> out(3);
  Poison(out.data(), out.size());
  out[0] = 1.0f;
  const CheckResult r = Check(out, ref, 1.0, 1.0);  // huge tolerance: NaN must still fail
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.unwritten, 2u);
  EXPECT_NE(r.report.find("unwritten"), std::string::npos);
}

TEST(Check, NonFiniteReferenceIsAMaskAndInfOutputFails) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> ref = {nan, 1.0f};
  std::vector<float> out = {123.0f, std::numeric_limits<float>::infinity()};
  const CheckResult r = Check(out, ref, 1e-3, 1e-3);
  EXPECT_EQ(r.checked, 1u);
  EXPECT_FALSE(r.pass);
  EXPECT_FALSE(Check(std::vector<float>{1.0f}, ref, 1, 1).pass);  // size mismatch
}

TEST(Check, FirstNMismatchesOnly) {
  std::vector<float> ref(50, 1.0f), out(50, 2.0f);
  const CheckResult r = Check(out.data(), ref.data(), 50, 0.0, 0.0, 3);
  EXPECT_EQ(r.mismatches, 50u);
  EXPECT_NE(r.report.find("[2]"), std::string::npos);
  EXPECT_EQ(r.report.find("[3]"), std::string::npos);
}

TEST(Timing, PercentilesInterpolate) {
  std::vector<double> s;
  for (int i = 10; i >= 0; --i) s.push_back(i);  // 0..10, unsorted
  const TimingStats t = Summarize(s);
  EXPECT_EQ(t.repeats, 11);
  EXPECT_DOUBLE_EQ(t.median_us, 5.0);
  EXPECT_DOUBLE_EQ(t.p10_us, 1.0);
  EXPECT_DOUBLE_EQ(t.p90_us, 9.0);
  int calls = 0;
  const TimingStats c = TimeCpu([&] { ++calls; }, 2, 5);
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(c.repeats, 5);
  EXPECT_LE(c.p10_us, c.p90_us);
}

TEST(Napkin, RooflinePicksTheLargerFloor) {
  auto c = LoadDefaultCeilings();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->hbm_bytes_per_s, 4.3e12, 1e9);
  // 4.3 GB in 1000 us at 4.3 TB/s: exactly the HBM floor.
  Roofline r = ComputeRoofline(4.3e9, 1e9, 1000.0, *c, "bf16");
  EXPECT_TRUE(r.memory_bound);
  EXPECT_NEAR(r.fraction, 1.0, 1e-9);
  EXPECT_NEAR(r.gb_per_s, 4300.0, 1e-6);
  // Same time, compute-heavy: 989.5 TFLOP -> 1e6 us floor.
  r = ComputeRoofline(1.0, 989.5e12 * 1e-3, 2000.0, *c, "bf16");
  EXPECT_FALSE(r.memory_bound);
  EXPECT_NEAR(r.fraction, 0.5, 1e-9);
  EXPECT_NE(NapkinLine(4.3e9, 0, 2000.0, *c, "bf16").find("50.0% of HBM"), std::string::npos);
}

TEST(Napkin, BadCeilingsFileNamesPath) {
  auto c = LoadCeilings("/nonexistent/ceilings.json");
  EXPECT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/nonexistent/ceilings.json"), std::string::npos);
}

// The ceilings come from the hardware profile, read by hw/'s one reader; a
// profile missing one names the JSON path, so a hand-edited profile fails
// loudly, not with a 0 ceiling.
TEST(Napkin, ProfileMissingCeilingNamesJsonPath) {
  auto doc = ReadJsonFile(DataPath("calibrate/profiles/h200-sxm.json"));
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  (*doc)["compute"].erase("fp8_flops_per_s");
  const std::string path = test_util::TestTempPath("profile_no_fp8.json");
  {
    std::ofstream f(path);
    f << doc->dump();
  }
  auto c = LoadCeilings(path);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/compute/fp8_flops_per_s"), std::string::npos)
      << c.status().ToString();
}

MeasurementRecord SampleRecord() {
  MeasurementRecord r;
  r.kernel = "paged_decode_attention";
  r.op_class = "attention";
  r.variant = "gqa_split_kv";
  r.dtype = "bf16";
  r.kv_dtype = "fp8";
  r.shape = {{"batch", 16}, {"context", 4096}};
  r.timing = {41.2, 40.8, 42.0, 50};
  r.bytes = 1.07e8;
  r.flops = 2.1e9;
  r.max_abs_err = 0.0009;
  r.check = "pass";
  return r;
}

TEST(Measurements, JsonMatchesFormatAndValidates) {
  RunInfo info;
  info.commit = "abc1234";
  const nlohmann::json j = MeasurementsToJson(info, {SampleRecord()});
  EXPECT_EQ(j["format"], "capplan.measurements.v1");
  EXPECT_EQ(j["gpu"], "cpu");
  EXPECT_EQ(j["dry_run"], true);
  EXPECT_EQ(j["records"][0]["shape"]["context"], 4096);
  EXPECT_EQ(j["records"][0]["median_us"], 41.2);
  EXPECT_TRUE(ValidateMeasurementsJson(j, "mem").ok());
  EXPECT_EQ(j["date"].get<std::string>().size(), 20u);  // 2026-11-29T23:10:00Z
}

TEST(Measurements, ValidatorRejectsBadFiles) {
  const nlohmann::json good = MeasurementsToJson(RunInfo{}, {SampleRecord()});
  nlohmann::json j = good;
  j["records"][0].erase("bytes");
  Status st = ValidateMeasurementsJson(j, "f.json");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/records/0"), std::string::npos) << st.message();
  j = good;
  j["records"][0]["op_class"] = "atention";
  st = ValidateMeasurementsJson(j, "f.json");
  EXPECT_NE(st.message().find("attention"), std::string::npos) << st.message();
  j = good;
  j["records"][0]["gb_per_s"] = 1.0;  // derived figures are never stored
  EXPECT_FALSE(ValidateMeasurementsJson(j, "f.json").ok());
  j = good;
  j["records"][0]["shape"]["batch"] = 1.5;
  EXPECT_FALSE(ValidateMeasurementsJson(j, "f.json").ok());
}

TEST(Suites, RegistryFindsByNameWithDidYouMean) {
  RegisterSuite("test_suite_alpha", [](const SuiteOptions&) -> Result<std::vector<SuiteCase>> {
    SuiteCase c;
    c.label = "one";
    c.run = [](const SuiteOptions&, MeasurementSink* s) {
      s->Add(SampleRecord());
      return Status::Ok();
    };
    return std::vector<SuiteCase>{c};
  });
  auto fn = SuiteRegistry().Find("test_suite_alpha");
  ASSERT_TRUE(fn.ok());
  auto cases = (*fn)(SuiteOptions{});
  ASSERT_TRUE(cases.ok());
  ASSERT_EQ(cases->size(), 1u);
  MeasurementSink sink;
  ASSERT_TRUE((*cases)[0].run(SuiteOptions{}, &sink).ok());
  EXPECT_EQ(sink.records().size(), 1u);
  auto bad = SuiteRegistry().Find("test_suite_alpah");
  EXPECT_EQ(bad.status().code(), StatusCode::kUsage);
  EXPECT_NE(bad.status().message().find("test_suite_alpha"), std::string::npos);
  SuiteOptions o;
  o.shape_filter = {"ctx4096"};
  EXPECT_TRUE(o.Selected("b16_ctx4096"));
  EXPECT_FALSE(o.Selected("b16_ctx256"));
}

}  // namespace
}  // namespace capplan::kernels
