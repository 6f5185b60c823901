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
  std::string value_label;              // axis label ("GiB per GPU")
  std::vector<std::string> categories;  // one horizontal bar each
  std::vector<std::string> segments;    // stack order, left to right
  std::vector<std::vector<double>> values;  // [category][segment]
  std::vector<std::string> bar_notes;       // text after each bar (may be empty)
};

std::string RenderXYChart(const XYChartSpec& spec);
std::string RenderStackedBars(const StackedBarSpec& spec);

// Round tick values covering [lo, hi] (about `count` of them).
std::vector<double> NiceTicks(double lo, double hi, int count);

}  // namespace capplan::report

#endif  // CAPPLAN_REPORT_SVG_CHART_H_
