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
