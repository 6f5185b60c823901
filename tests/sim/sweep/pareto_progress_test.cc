#include <sstream>

#include <gtest/gtest.h>

#include "sim/sweep/pareto.h"
#include "sim/sweep/progress.h"

namespace capplan {
namespace {

TEST(ParetoTest, KeepsOnlyNonDominatedSortedByX) {
  // (x, y): 3 dominates 1 (same x, higher y); 4 is dominated by 2.
  auto front = ParetoFront({{10, 100, 0}, {20, 80, 1}, {10, 120, 2}, {15, 70, 3}, {30, 10, 4},
                            {30, 10, 5}});
  std::vector<int> ids;
  for (const auto& p : front) ids.push_back(p.id);
  ASSERT_EQ(front.size(), 4u);
  EXPECT_EQ(front[0].id, 2);
  EXPECT_EQ(front[1].id, 1);
  EXPECT_EQ(front[2].x, 30);
  EXPECT_EQ(front[3].x, 30);  // exact duplicates both kept
  EXPECT_TRUE(ParetoFront({}).empty());
}

TEST(ProgressTest, RendersRateAndEta) {
  EXPECT_EQ(ProgressBar::Render("sweep", 25, 100, 5.0, 10),
            "sweep [##........] 25/100  25% 5.0/s ETA 0:15");
  EXPECT_EQ(ProgressBar::Render("sweep", 0, 10, 0.0, 4), "sweep [....] 0/10   0% 0.0/s ETA ?");
  EXPECT_EQ(FormatDuration(3725), "1:02:05");
}

TEST(ProgressTest, SilentWithoutATerminalAndThrottled) {
  ProgressBar off(nullptr, 10, "x");
  off.Tick();
  off.Finish();
  std::ostringstream os;
  double now = 0;
  {
    ProgressBar bar(&os, 3, "x", [&] { return now; });
    bar.Tick();      // draws
    bar.Tick();      // within 0.1 s: skipped
    now = 1;
    bar.Tick();      // last one always draws
  }
  const std::string s = os.str();
  EXPECT_NE(s.find("1/3"), std::string::npos);
  EXPECT_EQ(s.find("2/3"), std::string::npos);
  EXPECT_NE(s.find("3/3"), std::string::npos);
  EXPECT_EQ(s.back(), '\n');
}

}  // namespace
}  // namespace capplan
