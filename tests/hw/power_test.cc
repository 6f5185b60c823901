// The power block of every shipped profile against the ranges its public
// sources give (calibrate/profiles/base/*.json cite them): idle, decode
// (memory-bound) and prefill (compute-bound) power per GPU, and the
// parser's checks.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>

#include "common/data_path.h"
#include "common/json_util.h"
#include "hw/profile.h"

namespace capplan::hw {
namespace {

struct SourceRange {
  const char* profile;
  double tdp_w;
  double idle_lo, idle_hi;        // measured idle, or the stated band where none was measured
  double decode_lo, decode_hi;    // memory-bound decode power
  double prefill_lo, prefill_hi;  // compute-bound prefill power
};

// From the sources: H200 decode 137-300 W (arXiv:2605.11999) to 517 W at
// batch 128, H100 up to 680 W, H200 593-663 W at load, B200 452-943 W and
// 606 W at batch 128 (Serial Alice), H200 idle 80.3 W, H100 GEMMs held at
// the 700 W limit (thonking.ai); Blackwell parts without a measurement
// carry the B200 figures scaled by their board limit (1000, 1100, 1200,
// 1400 W).
constexpr SourceRange kRanges[] = {
    {"h100-sxm", 700, 60, 100, 137, 517, 600, 700},
    {"h200-sxm", 700, 60, 100, 137, 517, 593, 700},
    {"b200-sxm", 1000, 100, 200, 300, 606, 850, 1000},
    {"b300-sxm", 1100, 100, 220, 330, 670, 935, 1100},
    {"gb200-nvl72", 1200, 110, 240, 360, 730, 1020, 1200},
    {"gb300-nvl72", 1400, 120, 280, 420, 850, 1190, 1400},
};

// What the sources' decode and prefill do with the GPU: decode streams
// weights and KV at about 0.8 of peak HBM bandwidth with the tensor cores
// at about 0.05 of their dense peak; prefill GEMMs run at about 0.7 of the
// dense peak with HBM at about 0.1.
constexpr Utilization kDecode{0.05, 0.8};
constexpr Utilization kPrefill{0.7, 0.1};

void PrintTo(const SourceRange& r, std::ostream* os) { *os << r.profile; }

class ShippedPower : public ::testing::TestWithParam<SourceRange> {};

TEST_P(ShippedPower, IdleDecodeAndPrefillLieInTheSourcesRange) {
  const SourceRange& r = GetParam();
  auto p = LoadHardwareProfile(r.profile);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const PowerModel& m = p->power;
  ASSERT_TRUE(m.present) << r.profile << " has no power block";
  EXPECT_EQ(m.tdp_w.value, r.tdp_w);
  EXPECT_GE(m.idle_w.value, r.idle_lo);
  EXPECT_LE(m.idle_w.value, r.idle_hi);
  const double decode = m.KernelWatts(kDecode), prefill = m.KernelWatts(kPrefill);
  EXPECT_GE(decode, r.decode_lo) << "memory-bound (decode)";
  EXPECT_LE(decode, r.decode_hi) << "memory-bound (decode)";
  EXPECT_GE(prefill, r.prefill_lo) << "compute-bound (prefill)";
  EXPECT_LE(prefill, r.prefill_hi) << "compute-bound (prefill)";
  EXPECT_LT(decode, prefill);
  // Communication and host stalls draw less than decode, and more than idle.
  EXPECT_GT(m.communication_w.value, m.idle_w.value);
  EXPECT_LT(m.communication_w.value, decode);
  EXPECT_GT(m.overhead_w.value, m.idle_w.value);
  EXPECT_LT(m.overhead_w.value, m.communication_w.value);
  EXPECT_GE(m.kernel_floor_w.value, m.idle_w.value);
  EXPECT_GT(m.node_non_gpu_w.value, 0);
  EXPECT_EQ(p->provenance.at("power.tdp_w").kind, "datasheet");
  EXPECT_NE(p->provenance.at("power.hbm_w").source.find("http"), std::string::npos);
  EXPECT_NE(p->provenance.at("power.tensor_w").source.find("http"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(AllGpus, ShippedPower, ::testing::ValuesIn(kRanges), [](const auto& info) {
  std::string n = info.param.profile;
  for (char& c : n) {
    if (c == '-') c = '_';
  }
  return n;
});

nlohmann::json H200Base() {
  auto doc = ReadJsonFile(DataPath("calibrate/profiles/base/h200-sxm.json"));
  EXPECT_TRUE(doc.ok());
  return doc.ok() ? *doc : nlohmann::json::object();
}

TEST(PowerModel, ARangeMustHoldItsValue) {
  nlohmann::json doc = H200Base();
  doc["power"]["hbm_w"]["range"] = {500, 600};
  auto p = ParseHardwareProfile(doc, "x.json");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("/power/hbm_w/range"), std::string::npos)
      << p.status().message();
}

TEST(PowerModel, AFloorAboveTheBoardLimitIsRefused) {
  nlohmann::json doc = H200Base();
  doc["power"]["kernel_floor_w"]["value"] = 750;
  doc["power"]["kernel_floor_w"]["range"] = {600, 800};
  auto p = ParseHardwareProfile(doc, "x.json");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("kernel_floor_w"), std::string::npos) << p.status().message();
}

TEST(PowerModel, NoBlockMeansNoPowerModel) {
  nlohmann::json doc = H200Base();
  doc.erase("power");
  auto p = ParseHardwareProfile(doc, "x.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_FALSE(p->power.present);
}

TEST(PowerModel, KernelsDrawTheFloorPlusTheirDatapathsUpToTheBoardLimit) {
  auto p = LoadHardwareProfile("h200-sxm");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const PowerModel& m = p->power;
  const double floor = m.kernel_floor_w.value;
  EXPECT_DOUBLE_EQ(m.KernelWatts({0, 0}), floor);
  EXPECT_DOUBLE_EQ(m.KernelWatts({0.1, 0.5}), floor + 0.1 * m.tensor_w.value + 0.5 * m.hbm_w.value);
  EXPECT_DOUBLE_EQ(m.KernelWatts({1, 1}), m.tdp_w.value);
  const double e = m.cap_rate_exponent.value;
  // 600 W on an H200: work drawing 700 W slows by (700/600)^e and draws
  // 600 W; work drawing 500 W is untouched.
  EXPECT_DOUBLE_EQ(m.CapTimeFactor(700, 600), std::pow(700.0 / 600.0, e));
  EXPECT_DOUBLE_EQ(PowerModel::Capped(700, 600), 600);
  EXPECT_DOUBLE_EQ(m.CapTimeFactor(500, 600), 1.0);
  EXPECT_DOUBLE_EQ(PowerModel::Capped(500, 600), 500);
  EXPECT_DOUBLE_EQ(m.CapTimeFactor(700, 0), 1.0);
}

}  // namespace
}  // namespace capplan::hw
