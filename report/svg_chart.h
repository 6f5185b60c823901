// Inline SVG charts for the HTML report, generated in C++ so the report is
// one self-contained file with no script libraries and no network.
//
// Every chart is <svg class="chart" data-chart=ID viewBox=...> (it scales to
// the page width) and every drawn datum carries class="mark" with data-*
// attributes holding its values, so tests and readers can check that a chart
// shows data rather than an empty frame.
#ifndef CAPPLAN_REPORT_SVG_CHART_H_
#define CAPPLAN_REPORT_SVG_CHART_H_

#include <string>
#include <utility>
#include <vector>

namespace capplan::report {

struct XYSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in this order
  bool connect = true;                            // polyline through the points
};

struct XYChartSpec {
  std::string id;
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log2_x = false;  // concurrency sweeps double, so a log2 axis spaces them evenly
  std::vector<XYSeries> series;
  // Optional highlighted envelope (the Pareto front), drawn as a step line.
  std::vector<std::pair<double, double>> front;
  std::string front_label;
};

struct StackedBarSpec {
  std::string id;
  std::string title;
  std::string value_label;                  // axis label ("GiB per GPU")
  std::vector<std::string> categories;      // one horizontal bar each
  std::vector<std::string> segments;        // stack order, left to right
  std::vector<std::vector<double>> values;  // [category][segment]
  std::vector<std::string> bar_notes;       // text after each bar (may be empty)
};

// Vertical bars in groups: one group per category (a configuration at a
// load), one bar per series (p50, p90, p99) within it. Reference lines (an
// SLO) are drawn across the plot as dashed lines with their label.
struct ReferenceLine {
  double value = 0;
  std::string label;
};
struct GroupedBarSpec {
  std::string id;
  std::string title;
  std::string value_label;                  // y axis label ("ms")
  std::vector<std::string> categories;      // x axis, one group each
  std::vector<std::string> series;          // bars within a group, left to right
  std::vector<std::vector<double>> values;  // [category][series]; NaN = no bar
  // Optional error bars (prediction intervals), same shape; NaN = none.
  std::vector<std::vector<double>> lo, hi;
  std::vector<ReferenceLine> references;
  // viewBox width: narrower than the other charts, since these sit two to a
  // row on a wide page and their text should stay readable there.
  double width = 520;
};

std::string RenderXYChart(const XYChartSpec& spec);
std::string RenderGroupedBars(const GroupedBarSpec& spec);
std::string RenderStackedBars(const StackedBarSpec& spec);

// Round tick values covering [lo, hi] (about `count` of them).
std::vector<double> NiceTicks(double lo, double hi, int count);

}  // namespace capplan::report

#endif  // CAPPLAN_REPORT_SVG_CHART_H_
