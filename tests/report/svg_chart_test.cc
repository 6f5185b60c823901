#include "report/svg_chart.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <set>
#include <string>

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
    // Data marks only, not the legend's swatch.
    if (svg.substr(p, svg.find('>', p) - p).find("class=\"mark\"") == std::string::npos) continue;
    cx.push_back(std::stod(svg.substr(p + 5)));
  }
  ASSERT_EQ(cx.size(), 3u);
  EXPECT_NEAR(cx[1] - cx[0], cx[2] - cx[1], 0.2);
}

// The value of attribute `name` in the element starting at `at`.
std::string AttrAt(const std::string& svg, size_t at, const std::string& name) {
  const size_t end = svg.find('>', at);
  const size_t p = svg.find(" " + name + "=\"", at);
  if (p == std::string::npos || p > end) return "";
  const size_t v = p + name.size() + 3;
  return svg.substr(v, svg.find('"', v) - v);
}

// Past the palette's ten colours, series change marker: every series keeps
// a colour-and-marker pair of its own, in its marks and in the legend.
TEST(ReportSvg, EverySeriesHasItsOwnColourAndMarker) {
  XYChartSpec spec;
  spec.id = "many";
  spec.title = "t";
  for (int i = 0; i < 23; ++i) {
    spec.series.push_back({"S" + std::to_string(i), {{1.0 + i, 2.0 + i}, {2.0 + i, 3.0 + i}}, true});
  }
  const std::string svg = RenderXYChart(spec);
  std::map<std::string, std::set<std::string>> mark_style, swatch_style;
  std::set<std::string> pairs;
  for (const std::string cls : {"mark", "swatch"}) {
    const std::string key = "class=\"" + cls + "\"";
    for (size_t p = svg.find(key); p != std::string::npos; p = svg.find(key, p + 1)) {
      const size_t open = svg.rfind('<', p);
      const std::string style = AttrAt(svg, open, "fill") + " " + AttrAt(svg, open, "data-marker");
      (cls == "mark" ? mark_style : swatch_style)[AttrAt(svg, open, "data-series")].insert(style);
    }
  }
  ASSERT_EQ(mark_style.size(), 23u);
  for (const auto& [series, styles] : mark_style) {
    ASSERT_EQ(styles.size(), 1u) << series;
    EXPECT_EQ(swatch_style[series], styles) << series;
    pairs.insert(*styles.begin());
  }
  EXPECT_EQ(pairs.size(), 23u) << "two series share a colour and marker";
  // S0 and S10 share the first colour and differ in marker.
  EXPECT_EQ(*mark_style["S0"].begin(), "#0072B2 circle");
  EXPECT_EQ(*mark_style["S10"].begin(), "#0072B2 square");
  EXPECT_EQ(*mark_style["S20"].begin(), "#0072B2 triangle");
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

// Bar heights in the order drawn.
std::vector<double> BarHeights(const std::string& svg) {
  std::vector<double> h;
  for (size_t p = svg.find("class=\"mark\""); p != std::string::npos;
       p = svg.find("class=\"mark\"", p + 1)) {
    const size_t at = svg.find(" height=\"", p);
    h.push_back(std::stod(svg.substr(at + 9)));
  }
  return h;
}

TEST(ReportSvg, GroupedBarsLinearThenLogPastAFiftyFoldSpread) {
  GroupedBarSpec spec;
  spec.id = "lat";
  spec.title = "TTFT";
  spec.value_label = "ms";
  spec.categories = {"A", "B"};
  spec.series = {"p50", "p99"};
  spec.values = {{10, 40}, {20, std::numeric_limits<double>::quiet_NaN()}};
  spec.references = {{30, "SLO p90 \u2264 30 ms"}};
  std::string svg = RenderGroupedBars(spec);
  EXPECT_EQ(svg.find("log scale"), std::string::npos);
  std::vector<double> h = BarHeights(svg);
  ASSERT_EQ(h.size(), 3u);           // the NaN draws no bar
  EXPECT_NEAR(h[1], 4 * h[0], 0.2);  // linear: 40 ms is four times 10 ms
  EXPECT_NE(svg.find("class=\"slo\" data-value=\"30\""), std::string::npos);

  spec.values = {{10, 40000}, {100, 1000}};
  svg = RenderGroupedBars(spec);
  EXPECT_NE(svg.find("log scale"), std::string::npos);
  h = BarHeights(svg);
  ASSERT_EQ(h.size(), 4u);
  // log10: 10 -> 1 decade above the 1 ms floor, 100 -> 2, 1000 -> 3.
  EXPECT_NEAR(h[2], 2 * h[0], 0.2);
  EXPECT_NEAR(h[3], 3 * h[0], 0.2);
}

TEST(ReportSvg, ShortSeriesNamesLabelTheirLastPointSharedSpotsOnce) {
  XYChartSpec spec;
  spec.id = "t";
  spec.series = {{"A", {{1, 10}, {2, 20}}, true},
                 {"B", {{2, 20}}, true},
                 {"a very long series name", {{1, 5}}, true}};
  const std::string svg = RenderXYChart(spec);
  EXPECT_NE(svg.find("class=\"plabel\">A, B</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("class=\"plabel\">a very long"), std::string::npos);
}

}  // namespace
}  // namespace capplan::report
