#include "sim/sweep/grid.h"

#include <gtest/gtest.h>

#include "sim/sweep/point_id.h"
#include "tests/sim/sweep/fake_sim.h"

namespace capplan::sim::sweep {
namespace {

using testing::FakeBase;
using testing::FakeValidate;

TEST(PointIdTest, Fnv1aKnownVectors) {
  // Published FNV-1a 64 test vectors.
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

TEST(PointIdTest, IndependentOfAxisOrderAndTyped) {
  const GridAssignment a = {{"deployment.tp", 8}, {"workload.request_rate", 2.5}};
  const GridAssignment b = {{"workload.request_rate", 2.5}, {"deployment.tp", 8}};
  EXPECT_EQ(PointId(a), PointId(b));
  EXPECT_EQ(PointId(a).size(), 12u);
  EXPECT_EQ(CanonicalPointJson(a), R"({"deployment.tp":8,"workload.request_rate":2.5})");
  EXPECT_NE(PointId({{"deployment.tp", 8}}), PointId({{"deployment.tp", 8.0}}));
  EXPECT_NE(PointId({{"deployment.tp", 8}}), PointId({{"deployment.tp", 4}}));
}

TEST(GridFlagTest, ParsesValuesLikeSet) {
  auto a = ParseGridFlag("deployment.weights=fp8,int4");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->path, "deployment.weights");
  ASSERT_EQ(a->values.size(), 2u);
  EXPECT_EQ(a->values[0], "fp8");
  auto n = ParseGridFlag("deployment.tp=1,2,8");
  ASSERT_TRUE(n.ok());
  EXPECT_TRUE(n->values[2].is_number_integer());
  auto arr = ParseGridFlag("x=[1,2],[3,4],\"a,b\"");
  ASSERT_TRUE(arr.ok()) << arr.status().message();
  ASSERT_EQ(arr->values.size(), 3u);
  EXPECT_EQ(arr->values[1], nlohmann::json::parse("[3,4]"));
  EXPECT_EQ(arr->values[2], "a,b");
}

TEST(GridFlagTest, RejectsMalformedFlags) {
  for (const char* bad : {"deployment.tp", "=1,2", "deployment.tp=", "deployment.tp=1,,2",
                          "deployment.tp=1,2,1"}) {
    auto r = ParseGridFlag(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kUsage);
    EXPECT_NE(r.status().message().find("--grid"), std::string::npos) << r.status().message();
  }
}

std::vector<GridAxis> Axes(std::initializer_list<const char*> flags) {
  std::vector<GridAxis> axes;
  for (const char* f : flags) axes.push_back(ParseGridFlag(f).value());
  return axes;
}

TEST(SweepPlanTest, CrossProductFirstAxisOutermost) {
  auto plan = BuildSweepPlan(FakeBase(), "fake.json",
                             Axes({"deployment.tp=2,4", "workload.request_rate=1.5,3,6"}),
                             FakeValidate);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->points.size(), 6u);
  EXPECT_EQ(plan->points[0].grid[0].second, 2);
  EXPECT_EQ(plan->points[0].grid[1].second, 1.5);
  EXPECT_EQ(plan->points[1].grid[1].second, 3);
  EXPECT_EQ(plan->points[3].grid[0].second, 4);
  EXPECT_EQ(plan->points[5].doc["workload"]["request_rate"], 6);
  EXPECT_EQ(plan->points[5].doc["deployment"]["tp"], 4);
  EXPECT_EQ(plan->points[5].index, 5);
  EXPECT_EQ(plan->paths, (std::vector<std::string>{"deployment.tp", "workload.request_rate"}));
}

TEST(SweepPlanTest, ObjectValuesMergeSoCoupledFieldsMoveTogether) {
  auto plan = BuildSweepPlan(
      FakeBase(), "fake.json",
      Axes({R"(deployment={"tp":4,"replicas":2},{"tp":2})"}), FakeValidate);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->points.size(), 2u);
  EXPECT_EQ(plan->points[0].doc["deployment"]["tp"], 4);
  EXPECT_EQ(plan->points[0].doc["deployment"]["replicas"], 2);
  EXPECT_EQ(plan->points[0].doc["deployment"]["weights"], "fp8");  // kept, not replaced
  EXPECT_EQ(plan->points[1].doc["deployment"]["replicas"], 1);
}

TEST(SweepPlanTest, NoGridIsTheBaseScenario) {
  auto plan = BuildSweepPlan(FakeBase(), "fake.json", {}, FakeValidate);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->points.size(), 1u);
  EXPECT_EQ(plan->points[0].doc, FakeBase());
}

TEST(SweepPlanTest, UnknownPathNamesTheFlagAndSuggests) {
  auto plan = BuildSweepPlan(FakeBase(), "fake.json",
                             Axes({"deployment.tp=2,4", "deployment.replica=1,2"}),
                             FakeValidate);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kUsage);
  const std::string& m = plan.status().message();
  EXPECT_NE(m.find("--grid deployment.replica=1"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'replicas'"), std::string::npos) << m;
}

TEST(SweepPlanTest, TypeMismatchNamesTheFlag) {
  auto plan = BuildSweepPlan(FakeBase(), "fake.json", Axes({"deployment.tp=2,four"}),
                             FakeValidate);
  ASSERT_FALSE(plan.ok());
  const std::string& m = plan.status().message();
  EXPECT_NE(m.find("--grid deployment.tp=four"), std::string::npos) << m;
  EXPECT_NE(m.find("/deployment/tp: must be an integer"), std::string::npos) << m;
}

TEST(SweepPlanTest, PathThroughANonObjectIsAnError) {
  auto plan = BuildSweepPlan(FakeBase(), "fake.json", Axes({"seed.x=1"}), FakeValidate);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("--grid seed.x=1"), std::string::npos)
      << plan.status().message();
}

TEST(SweepPlanTest, DuplicatePathIsAnError) {
  auto plan = BuildSweepPlan(FakeBase(), "fake.json",
                             Axes({"deployment.tp=2", "deployment.tp=4"}), FakeValidate);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("path given twice"), std::string::npos);
}

TEST(SweepPlanTest, ImpossibleConfigurationsAreMarkedNotFatal) {
  auto plan = BuildSweepPlan(FakeBase(), "fake.json", Axes({"deployment.tp=2,3"}), FakeValidate);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_TRUE(plan->points[0].invalid.empty());
  EXPECT_NE(plan->points[1].invalid.find("does not divide"), std::string::npos);
}

}  // namespace
}  // namespace capplan::sim::sweep
