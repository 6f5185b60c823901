// The profile fields that tell GPU generations and platforms apart: the
// architecture (which tensor-core formats and kernels exist), the dense FP4
// rate, the form factor and the NVLink domain it bounds.
#include <gtest/gtest.h>

#include <string>

#include "common/data_path.h"
#include "common/json_util.h"
#include "hw/profile.h"

namespace capplan::hw {
namespace {

nlohmann::json H200Base() {
  auto doc = ReadJsonFile(DataPath("calibrate/profiles/base/h200-sxm.json"));
  EXPECT_TRUE(doc.ok());
  return doc.ok() ? *doc : nlohmann::json::object();
}

TEST(ProfileFields, HopperBaseIsSm90SxmWithAnEightGpuDomainAndNoFp4) {
  auto p = ParseHardwareProfile(H200Base(), "h200.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->architecture, "sm90");
  EXPECT_EQ(p->form_factor, "sxm");
  EXPECT_EQ(p->nvlink_domain_gpus, 8);
  EXPECT_EQ(p->fp4_flops_per_s, 0);
  EXPECT_FALSE(p->provenance.count("compute.fp4_flops_per_s"));
  EXPECT_EQ(p->provenance.at("collectives.nvlink_domain_gpus").kind, "datasheet");
}

TEST(ProfileFields, Fp4RateIsReadWithItsProvenance) {
  nlohmann::json doc = H200Base();
  doc["compute"]["fp4_flops_per_s"] = {
      {"value", 9e15}, {"provenance", {{"kind", "datasheet"}, {"source", "s"}}}};
  auto p = ParseHardwareProfile(doc, "x.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->fp4_flops_per_s, 9e15);
  EXPECT_EQ(p->provenance.at("compute.fp4_flops_per_s").source, "s");
  doc["compute"]["fp4_flops_per_s"].erase("provenance");
  auto bad = ParseHardwareProfile(doc, "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fp4_flops_per_s"), std::string::npos);
}

TEST(ProfileFields, ArchitectureIsRequiredWithTheCostModelAndChecked) {
  nlohmann::json doc = H200Base();
  doc.erase("architecture");
  auto missing = ParseHardwareProfile(doc, "x.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("architecture"), std::string::npos);
  doc["architecture"] = "sm91";
  auto unknown = ParseHardwareProfile(doc, "x.json");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("architecture"), std::string::npos);
  // A memory-only profile (models/ reads only the memory block) needs none.
  nlohmann::json bootstrap = {{"name", "x"}, {"gpu", "y"}, {"memory", H200Base()["memory"]}};
  bootstrap["memory"].erase("hbm_bandwidth_bytes_per_s");
  bootstrap["memory"].erase("hbm_bandwidth_spec_bytes_per_s");
  auto b = ParseHardwareProfile(bootstrap, "b.json");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->architecture, "");
}

TEST(ProfileFields, AnNvl72DomainOnAnHgxProfileIsAOneLineErrorNamingTheField) {
  nlohmann::json doc = H200Base();
  doc["collectives"]["nvlink_domain_gpus"]["value"] = 72;
  auto p = ParseHardwareProfile(doc, "b200-sxm.json");
  ASSERT_FALSE(p.ok());
  const std::string& m = p.status().message();
  EXPECT_NE(m.find("b200-sxm.json"), std::string::npos) << m;
  EXPECT_NE(m.find("nvlink_domain_gpus"), std::string::npos) << m;
  EXPECT_NE(m.find("nvl72"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  doc["form_factor"] = "nvl72";
  auto rack = ParseHardwareProfile(doc, "x.json");
  ASSERT_TRUE(rack.ok()) << rack.status().message();
  EXPECT_EQ(rack->nvlink_domain_gpus, 72);
  doc["collectives"]["nvlink_domain_gpus"]["value"] = 7.5;
  EXPECT_FALSE(ParseHardwareProfile(doc, "x.json").ok());
  doc["collectives"]["nvlink_domain_gpus"]["value"] = 8;
  doc["form_factor"] = "pcie";
  auto ff = ParseHardwareProfile(doc, "x.json");
  ASSERT_FALSE(ff.ok());
  EXPECT_NE(ff.status().message().find("form_factor"), std::string::npos);
  EXPECT_EQ(MaxNvlinkDomainGpus("sxm"), 8);
  EXPECT_EQ(MaxNvlinkDomainGpus("nvl72"), 72);
  EXPECT_EQ(MaxNvlinkDomainGpus("pcie"), 0);
}

}  // namespace
}  // namespace capplan::hw

namespace capplan::hw {
namespace {

TEST(ProfileFields, EveryShippedProfileNamesItsArchitectureAndDomain) {
  for (const std::string& name : ShippedProfileNames()) {
    auto p = LoadHardwareProfile(name);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_NE(p->architecture, "") << name;
    EXPECT_GT(p->nvlink_domain_gpus, 0) << name;
    EXPECT_LE(p->nvlink_domain_gpus, MaxNvlinkDomainGpus(p->form_factor)) << name;
  }
}

}  // namespace
}  // namespace capplan::hw

namespace capplan::hw {
namespace {

// Where a kernel table was measured, and its drift to other releases: read
// strictly, inherited by a table assumed from it, and compared by release.
TEST(ProfileFields, KernelTablesSayWhereTheyWereMeasured) {
  auto shipped = LoadHardwareProfile("h200-sxm");
  ASSERT_TRUE(shipped.ok()) << shipped.status().message();
  const KernelTable& gemm = shipped->kernels.at("vllm_torch_bf16_gemm");
  ASSERT_FALSE(gemm.measured_at.empty());
  EXPECT_EQ(gemm.measured_at[0].engine, "vllm");
  EXPECT_EQ(gemm.measured_at[0].engine_version, "0.24.0");
  ASSERT_TRUE(gemm.version_drift.has_value());
  EXPECT_GT(gemm.version_drift->value, 0);
  EXPECT_NE(gemm.version_drift->source.find("aic-version-drift.json"), std::string::npos);
  EXPECT_EQ(CrossVersionNote(gemm, "vllm", "0.24.0"), "");
  EXPECT_NE(CrossVersionNote(gemm, "vllm", "0.24"), "");  // not a release triple: not matched
  EXPECT_EQ(CrossVersionNote(gemm, "vllm", "0.10.0"),
            "measured at vllm 0.24.0 (H100, H200), priced for vllm 0.10.0");
  EXPECT_NE(CrossVersionNote(gemm, "sglang", "0.24.0"), "");
  // vllm_flashmla_decode_* tables are assumed from another implementation's.
  for (const auto& [name, t] : shipped->kernels) {
    if (!t.assumed()) continue;
    EXPECT_EQ(t.measured_at.size(), shipped->kernels.at(t.assumed_from).measured_at.size())
        << name;
  }
}

TEST(ProfileFields, AMalformedMeasuredAtOrDriftIsAOneLineErrorNamingTheField) {
  auto doc = ReadJsonFile(DataPath("calibrate/profiles/h200-sxm.json"));
  ASSERT_TRUE(doc.ok());
  auto expect_error = [](const nlohmann::json& d, const std::string& field) {
    auto p = ParseHardwareProfile(d, "x.json");
    ASSERT_FALSE(p.ok()) << field;
    const std::string& m = p.status().message();
    EXPECT_NE(m.find("x.json"), std::string::npos) << m;
    EXPECT_NE(m.find(field), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  };
  nlohmann::json& t = (*doc)["kernels"]["vllm_torch_bf16_gemm"];
  const nlohmann::json good = *doc;
  t["measured_at"][0]["engine_version"] = "latest";
  expect_error(*doc, "/kernels/vllm_torch_bf16_gemm/measured_at/0/engine_version");
  *doc = good;
  (*doc)["kernels"]["vllm_torch_bf16_gemm"]["measured_at"][0].erase("engine");
  expect_error(*doc, "measured_at/0/engine");
  *doc = good;
  (*doc)["kernels"]["vllm_torch_bf16_gemm"]["measured_at"][0]["clock"] = 1;
  expect_error(*doc, "measured_at/0/clock");
  *doc = good;
  (*doc)["kernels"]["vllm_torch_bf16_gemm"]["measured_at"] = "vllm 0.24.0";
  expect_error(*doc, "measured_at");
  *doc = good;
  (*doc)["kernels"]["vllm_torch_bf16_gemm"]["version_drift"]["value"] = -0.1;
  expect_error(*doc, "version_drift/value");
  *doc = good;
  (*doc)["kernels"]["vllm_torch_bf16_gemm"]["version_drift"].erase("source");
  expect_error(*doc, "version_drift/source");
  *doc = good;
  (*doc)["kernels"]["vllm_torch_bf16_gemm"].erase("measured_at");
  expect_error(*doc, "version_drift");
  EXPECT_TRUE(ParseHardwareProfile(good, "x.json").ok());
}

}  // namespace
}  // namespace capplan::hw
