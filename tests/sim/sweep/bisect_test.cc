#include "sim/sweep/bisect.h"

#include <gtest/gtest.h>

namespace capplan::sim::sweep {
namespace {

// SLOs hold up to `threshold` req/s.
std::function<Result<RateProbe>(double)> Threshold(double threshold, int* calls) {
  return [=](double rate) -> Result<RateProbe> {
    ++*calls;
    RateProbe p;
    p.met = rate <= threshold;
    return p;
  };
}

TEST(BisectTest, FindsTheLargestPassingRateWithinTolerance) {
  int calls = 0;
  auto r = BisectRate({0.1, 100, 0.01, 40}, Threshold(7.3, &calls));
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->feasible);
  EXPECT_FALSE(r->hit_max);
  EXPECT_LE(r->best->rate, 7.3);
  EXPECT_GT(r->first_fail->rate, 7.3);
  EXPECT_LE(r->first_fail->rate - r->best->rate, 0.01 * r->best->rate);
  EXPECT_GE(r->best->rate, 7.3 * 0.99);
  EXPECT_EQ(r->probes, calls);
  // log2(99.9 / (0.073)) ~ 10.4 halvings plus the two end probes.
  EXPECT_LE(calls, 14);
}

TEST(BisectTest, PassingAtMaxStopsAfterOneProbe) {
  int calls = 0;
  auto r = BisectRate({1, 50, 0.02, 40}, Threshold(1000, &calls));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->feasible);
  EXPECT_TRUE(r->hit_max);
  EXPECT_EQ(r->best->rate, 50);
  EXPECT_EQ(calls, 1);
}

TEST(BisectTest, FailingAtMinIsInfeasible) {
  int calls = 0;
  auto r = BisectRate({1, 50, 0.02, 40}, Threshold(0.5, &calls));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->feasible);
  EXPECT_FALSE(r->best.has_value());
  EXPECT_EQ(r->first_fail->rate, 1);
  EXPECT_EQ(calls, 2);
}

TEST(BisectTest, ProbeCapAndErrors) {
  int calls = 0;
  auto capped = BisectRate({1e-6, 1e6, 1e-9, 5}, Threshold(3, &calls));
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(calls, 5);
  auto bad_range = BisectRate({5, 1, 0.02, 40}, Threshold(3, &calls));
  EXPECT_FALSE(bad_range.ok());
  auto failing = BisectRate({1, 10, 0.02, 40}, [](double) -> Result<RateProbe> {
    return Status::Internal("boom");
  });
  ASSERT_FALSE(failing.ok());
  EXPECT_EQ(failing.status().message(), "boom");
}

}  // namespace
}  // namespace capplan::sim::sweep
