#include "report/svg_chart.h"

#include <gtest/gtest.h>

namespace capplan::report {
namespace {

TEST(ReportSvg, NiceTicksCoverTheRangeWithRoundSteps) {
  const auto t = NiceTicks(0, 437, 5);
  ASSERT_GE(t.size(), 2u);
  EXPECT_EQ(t.front(), 0);
  EXPECT_GE(t.back(), 437);
  EXPECT_EQ(t[1] - t[0], 100);
}

TEST(ReportSvg, ChartWithoutDataSaysSoInsteadOfAnEmptyFrame) {
  XYChartSpec spec;
  spec.id = "x";
  spec.title = "t";
  spec.series.push_back({"s", {}, true});
  const std::string svg = RenderXYChart(spec);
  EXPECT_NE(svg.find("no data"), std::string::npos);
  EXPECT_EQ(svg.find("class=\"mark\""), std::string::npos);
}

TEST(ReportSvg, Log2AxisPlacesDoublingsEvenly) {
  XYChartSpec spec;
  spec.id = "c";
  spec.title = "t";
  spec.log2_x = true;
  spec.series.push_back({"s", {{1, 1}, {2, 2}, {4, 3}}, true});
  const std::string svg = RenderXYChart(spec);
  // Marks at x = 1, 2, 4 are equally spaced on a log2 axis.
  std::vector<double> cx;
  for (size_t p = svg.find(" cx=\""); p != std::string::npos; p = svg.find(" cx=\"", p + 1)) {
    cx.push_back(std::stod(svg.substr(p + 5)));
  }
  ASSERT_EQ(cx.size(), 3u);
  EXPECT_NEAR(cx[1] - cx[0], cx[2] - cx[1], 0.2);
}

TEST(ReportSvg, StackedBarsScaleToTheLargestBarAndEscapeLabels) {
  StackedBarSpec spec;
  spec.id = "m";
  spec.title = "mem";
  spec.categories = {"a<b", "c"};
  spec.segments = {"w", "kv"};
  spec.values = {{10, 20}, {5, 5}};
  const std::string svg = RenderStackedBars(spec);
  EXPECT_NE(svg.find("a&lt;b"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  EXPECT_NE(svg.find("data-value=\"20\""), std::string::npos);
}

}  // namespace
}  // namespace capplan::report
