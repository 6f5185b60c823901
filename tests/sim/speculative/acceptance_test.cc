#include "sim/speculative/acceptance.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace capplan::sim::speculative {
namespace {

TEST(AcceptanceTest, ClosedFormExpectedTokens) {
  AcceptanceModel m;
  std::string err;
  ASSERT_TRUE(MakeAcceptance({0.8, 0.5, 0.25}, &m, &err));
  // 1 + 0.8 + 0.8*0.5 + 0.8*0.5*0.25 = 2.3
  EXPECT_DOUBLE_EQ(m.ExpectedTokensPerStep(), 2.3);
}

TEST(AcceptanceTest, MeanLengthGivesConstantProbability) {
  AcceptanceModel m;
  std::string err;
  // 1 + p + p^2 = 1.75 -> p = 0.5
  ASSERT_TRUE(AcceptanceFromMeanLength(1.75, 2, &m, &err));
  ASSERT_EQ(m.draft_tokens(), 2);
  EXPECT_NEAR(m.p[0], 0.5, 1e-12);
  EXPECT_NEAR(m.ExpectedTokensPerStep(), 1.75, 1e-12);
  ASSERT_TRUE(AcceptanceFromMeanLength(4.0, 3, &m, &err));
  EXPECT_EQ(m.p[2], 1.0);
  ASSERT_TRUE(AcceptanceFromMeanLength(1.0, 3, &m, &err));
  EXPECT_EQ(m.p[0], 0.0);
}

TEST(AcceptanceTest, SampleMeanConvergesToClosedForm) {
  AcceptanceModel m;
  std::string err;
  ASSERT_TRUE(MakeAcceptance({0.9, 0.7, 0.6}, &m, &err));
  // A fixed linear congruential sequence: deterministic, no library RNG.
  uint64_t s = 12345;
  auto uniform = [&s] {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) * 0x1.0p-53;
  };
  int64_t total = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const int64_t t = m.SampleTokens(uniform);
    ASSERT_GE(t, 1);
    ASSERT_LE(t, 4);
    total += t;
  }
  EXPECT_NEAR(static_cast<double>(total) / n, m.ExpectedTokensPerStep(), 0.01);
}

TEST(AcceptanceTest, RejectsBadInput) {
  AcceptanceModel m;
  std::string err;
  EXPECT_FALSE(MakeAcceptance({0.5, 1.5}, &m, &err));
  EXPECT_NE(err.find("position 1"), std::string::npos);
  EXPECT_FALSE(MakeAcceptance({}, &m, &err));
  EXPECT_FALSE(MakeAcceptance({-0.1}, &m, &err));
  EXPECT_FALSE(AcceptanceFromMeanLength(3.5, 2, &m, &err));
  EXPECT_NE(err.find("[1, 3]"), std::string::npos);
  EXPECT_FALSE(AcceptanceFromMeanLength(0.5, 2, &m, &err));
  EXPECT_FALSE(AcceptanceFromMeanLength(2, 0, &m, &err));
}

}  // namespace
}  // namespace capplan::sim::speculative
