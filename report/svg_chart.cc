#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "report/text_util.h"

namespace capplan::report {
namespace {

// Okabe-Ito colour-blind-safe palette (Okabe & Ito 2008), then greys, so
// series stay distinguishable for most readers and in greyscale print.
constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9",
                                    "#D55E00", "#F0E442", "#000000", "#999999", "#666666"};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
// Past the palette's size series change marker shape, so every series of a
// chart keeps a colour-and-shape pair of its own (series 0 and 10 share
// blue, not the circle).
constexpr const char* kMarkers[] = {"circle", "square", "triangle", "diamond", "triangle-down"};
constexpr int kMarkerCount = sizeof(kMarkers) / sizeof(kMarkers[0]);

struct SeriesStyle {
  const char* color;
  const char* marker;
};

SeriesStyle StyleAt(size_t i) {
  return {kPalette[i % kPaletteSize], kMarkers[(i / kPaletteSize) % kMarkerCount]};
}

constexpr double kWidth = 760;
constexpr double kCharWidth = 6.6;  // average glyph width at 12px sans-serif

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

std::string Attr(const std::string& s) { return HtmlEscape(s); }

// An open marker element of `marker`'s shape centred on (x, y), radius r;
// the caller adds attributes and closes it.
std::string MarkerOpen(const std::string& marker, double x, double y, double r) {
  if (marker == "circle") {
    return "<circle cx=\"" + Num(x) + "\" cy=\"" + Num(y) + "\" r=\"" + Num(r) + "\"";
  }
  std::string d;
  if (marker == "square") {
    d = "M" + Num(x - r) + " " + Num(y - r) + "h" + Num(2 * r) + "v" + Num(2 * r) + "h" +
        Num(-2 * r) + "Z";
  } else if (marker == "diamond") {
    d = "M" + Num(x) + " " + Num(y - r * 1.3) + "L" + Num(x + r * 1.3) + " " + Num(y) + "L" +
        Num(x) + " " + Num(y + r * 1.3) + "L" + Num(x - r * 1.3) + " " + Num(y) + "Z";
  } else {
    const double s = marker == "triangle" ? 1 : -1;  // apex up or down
    d = "M" + Num(x) + " " + Num(y - s * r * 1.3) + "L" + Num(x + r * 1.2) + " " +
        Num(y + s * r) + "L" + Num(x - r * 1.2) + " " + Num(y + s * r) + "Z";
  }
  return "<path d=\"" + d + "\"";
}

// Legend laid out in rows that wrap at the chart width; returns its height.
// `markers` (XY charts): the swatch is the series' marker; empty: a square.
double Legend(std::ostringstream& os, const std::vector<std::string>& names, double top,
              const std::vector<std::string>& colors, double width = kWidth,
              const std::vector<std::string>& markers = {}) {
  double x = 10, y = top;
  for (size_t i = 0; i < names.size(); ++i) {
    const double w = 22 + kCharWidth * static_cast<double>(names[i].size()) + 14;
    if (x + w > width - 10 && x > 10) {
      x = 10;
      y += 18;
    }
    if (i < markers.size() && !markers[i].empty()) {
      os << MarkerOpen(markers[i], x + 6, y - 3, 5.5) << " class=\"swatch\" data-series=\""
         << Attr(names[i]) << "\" data-marker=\"" << markers[i] << "\" fill=\"" << colors[i]
         << "\"/>";
    } else {
      os << "<rect x=\"" << Num(x) << "\" y=\"" << Num(y - 9)
         << "\" width=\"12\" height=\"12\" fill=\"" << colors[i] << "\"/>";
    }
    os << "<text x=\"" << Num(x + 16) << "\" y=\"" << Num(y + 1) << "\" class=\"legend\">"
       << HtmlEscape(names[i]) << "</text>";
    x += w;
  }
  return y - top + 18;
}

// The chart's <svg> element, its accessible title and its visible title.
void OpenSvg(std::ostringstream& os, const std::string& id, const std::string& title,
             double width, double height) {
  os << "<svg class=\"chart\" data-chart=\"" << Attr(id) << "\" viewBox=\"0 0 " << Num(width)
     << " " << Num(height) << "\" role=\"img\" aria-label=\"" << Attr(title)
     << "\" xmlns=\"http://www.w3.org/2000/svg\">";
  os << "<title>" << HtmlEscape(title) << "</title>";
  os << "<text x=\"" << Num(width / 2) << "\" y=\"20\" class=\"ctitle\">" << HtmlEscape(title)
     << "</text>";
}

// A horizontal grid line with its tick label at the left of the plot.
void YGridLine(std::ostringstream& os, double left, double plot_w, double y, double value) {
  os << "<line x1=\"" << Num(left) << "\" x2=\"" << Num(left + plot_w) << "\" y1=\"" << Num(y)
     << "\" y2=\"" << Num(y) << "\" class=\"grid\"/>"
     << "<text x=\"" << Num(left - 6) << "\" y=\"" << Num(y + 4) << "\" class=\"ytick\">"
     << FormatNumber(value) << "</text>";
}

// A vertical grid line with its tick label under the plot.
void XGridLine(std::ostringstream& os, double top, double plot_h, double x, double value) {
  os << "<line x1=\"" << Num(x) << "\" x2=\"" << Num(x) << "\" y1=\"" << Num(top)
     << "\" y2=\"" << Num(top + plot_h) << "\" class=\"grid\"/>"
     << "<text x=\"" << Num(x) << "\" y=\"" << Num(top + plot_h + 16) << "\" class=\"xtick\">"
     << FormatNumber(value) << "</text>";
}

// The plot's frame and its rotated y-axis label.
void FrameAndYLabel(std::ostringstream& os, double left, double top, double plot_w,
                    double plot_h, const std::string& label) {
  os << "<rect x=\"" << Num(left) << "\" y=\"" << Num(top) << "\" width=\"" << Num(plot_w)
     << "\" height=\"" << Num(plot_h) << "\" class=\"frame\"/>";
  os << "<text transform=\"translate(16 " << Num(top + plot_h / 2) << ") rotate(-90)\" "
     << "class=\"ylabel\">" << HtmlEscape(label) << "</text>";
}

}  // namespace

std::vector<double> NiceTicks(double lo, double hi, int count) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, count);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  }
  std::vector<double> t;
  for (double v = std::floor(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    t.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  }
  if (t.back() < hi) t.push_back(t.back() + step);
  return t;
}

namespace {

// An XY chart's plot area and its data -> pixel mapping.
class XYPlot {
 public:
  static constexpr double kLeft = 78, kRight = 24, kTop = 36, kPlotH = 260;
  static constexpr double kPlotW = kWidth - kLeft - kRight;

  explicit XYPlot(const XYChartSpec& spec) : spec_(spec) {
    for (const auto& s : spec.series) {
      for (const auto& [x, y] : s.points) {
        if (!Shown(x)) continue;
        xmin_ = std::min(xmin_, x);
        xmax_ = std::max(xmax_, x);
        ymax_ = std::max(ymax_, y);
        ++n_points_;
      }
    }
  }
  size_t points() const { return n_points_; }
  bool Shown(double x) const { return !spec_.log2_x || x > 0; }

  // Ticks (log2 x: powers of two) and the ranges they span.
  void Scale() {
    if (spec_.log2_x) {
      lx0_ = std::floor(std::log2(xmin_));
      lx1_ = std::ceil(std::log2(xmax_));
      if (lx1_ <= lx0_) lx1_ = lx0_ + 1;
      const int stride = std::max(1, static_cast<int>(std::ceil((lx1_ - lx0_) / 10)));
      for (double e = lx0_; e <= lx1_ + 1e-9; e += stride) xticks_.push_back(std::exp2(e));
    } else {
      xticks_ = NiceTicks(std::min(0.0, xmin_), xmax_, 6);
      lx0_ = xticks_.front();
      lx1_ = xticks_.back();
    }
    yticks_ = NiceTicks(0, ymax_ > 0 ? ymax_ : 1, 5);
    y1_ = yticks_.back();
  }
  double X(double x) const {
    const double v = spec_.log2_x ? std::log2(x) : x;
    return kLeft + (v - lx0_) / (lx1_ - lx0_) * kPlotW;
  }
  double Y(double y) const { return kTop + kPlotH - y / y1_ * kPlotH; }

  void DrawAxes(std::ostringstream& os) const {
    os << "<g class=\"axes\">";
    for (double t : yticks_) YGridLine(os, kLeft, kPlotW, Y(t), t);
    for (double t : xticks_) XGridLine(os, kTop, kPlotH, X(t), t);
    os << "<rect x=\"" << Num(kLeft) << "\" y=\"" << Num(kTop) << "\" width=\"" << Num(kPlotW)
       << "\" height=\"" << Num(kPlotH) << "\" class=\"frame\"/>";
    os << "<text x=\"" << Num(kLeft + kPlotW / 2) << "\" y=\"" << Num(kTop + kPlotH + 36)
       << "\" class=\"xlabel\">" << HtmlEscape(spec_.x_label) << "</text>";
    os << "<text transform=\"translate(16 " << Num(kTop + kPlotH / 2) << ") rotate(-90)\" "
       << "class=\"ylabel\">" << HtmlEscape(spec_.y_label) << "</text></g>";
  }

  // Step envelope: from each front point go left at its height, so the
  // area under the line is what the front achieves.
  void DrawFront(std::ostringstream& os) const {
    if (spec_.front.empty()) return;
    std::vector<std::pair<double, double>> f = spec_.front;
    std::sort(f.begin(), f.end());
    std::ostringstream pts;
    for (size_t i = 0; i < f.size(); ++i) {
      if (i > 0) pts << Num(X(f[i - 1].first)) << "," << Num(Y(f[i].second)) << " ";
      pts << Num(X(f[i].first)) << "," << Num(Y(f[i].second)) << " ";
    }
    os << "<polyline points=\"" << pts.str() << "\" class=\"front\"/>";
  }

  void DrawSeries(std::ostringstream& os, const XYSeries& s, SeriesStyle style) const {
    const char* color = style.color;
    if (s.connect && s.points.size() > 1) {
      std::ostringstream pts;
      for (const auto& [x, y] : s.points) {
        if (Shown(x)) pts << Num(X(x)) << "," << Num(Y(y)) << " ";
      }
      // A series that reuses a palette colour also draws its line dashed.
      const bool reused = std::string(style.marker) != kMarkers[0];
      os << "<polyline points=\"" << pts.str() << "\" fill=\"none\" stroke=\"" << color
         << "\" stroke-width=\"2\"" << (reused ? " stroke-dasharray=\"6 3\"" : "") << "/>";
    }
    for (const auto& [x, y] : s.points) {
      if (!Shown(x)) continue;
      const std::string open = MarkerOpen(style.marker, X(x), Y(y), 4.5);
      os << open << " class=\"mark\" data-series=\"" << Attr(s.name) << "\" data-marker=\""
         << style.marker << "\" data-x=\"" << FormatNumber(x, 6) << "\" data-y=\""
         << FormatNumber(y, 6) << "\" fill=\"" << color << "\"><title>" << HtmlEscape(s.name)
         << ": " << FormatNumber(x) << ", " << FormatNumber(y) << "</title>"
         << (open.rfind("<circle", 0) == 0 ? "</circle>" : "</path>");
    }
  }

  // Short series names also sit at the series' last point, so a reader
  // need not match colours against the legend; series ending on the same
  // spot share one label ("B, E, F").
  void DrawEndLabels(std::ostringstream& os) const {
    std::map<std::pair<long, long>, std::vector<std::string>> end_labels;
    for (const auto& s : spec_.series) {
      for (auto it = s.points.rbegin(); it != s.points.rend(); ++it) {
        if (!Shown(it->first)) continue;
        if (s.name.size() <= 12) {
          end_labels[{std::lround(X(it->first)), std::lround(Y(it->second))}].push_back(s.name);
        }
        break;
      }
    }
    for (const auto& [pos, names] : end_labels) {
      std::string text;
      for (const auto& n : names) text += (text.empty() ? "" : ", ") + n;
      os << "<text x=\"" << Num(static_cast<double>(pos.first) + 7) << "\" y=\""
         << Num(static_cast<double>(pos.second) - 7) << "\" class=\"plabel\">" << HtmlEscape(text)
         << "</text>";
    }
  }

 private:
  const XYChartSpec& spec_;
  double xmin_ = INFINITY, xmax_ = -INFINITY, ymax_ = 0;
  size_t n_points_ = 0;
  double lx0_ = 0, lx1_ = 1, y1_ = 1;
  std::vector<double> xticks_, yticks_;
};

}  // namespace

std::string RenderXYChart(const XYChartSpec& spec) {
  XYPlot plot(spec);
  constexpr double top = XYPlot::kTop, plot_h = XYPlot::kPlotH;
  std::vector<std::string> names, colors, markers;
  for (size_t i = 0; i < spec.series.size(); ++i) {
    names.push_back(spec.series[i].name);
    colors.push_back(StyleAt(i).color);
    markers.push_back(StyleAt(i).marker);
  }
  if (!spec.front.empty()) {
    names.push_back(spec.front_label);
    colors.push_back("#222222");
    markers.push_back("");
  }
  std::ostringstream legend;
  const double legend_h = Legend(legend, names, top + plot_h + 58, colors, kWidth, markers);
  std::ostringstream os;
  OpenSvg(os, spec.id, spec.title, kWidth, top + plot_h + 58 + legend_h);
  if (plot.points() == 0) {
    os << "<text x=\"" << Num(kWidth / 2) << "\" y=\"" << Num(top + plot_h / 2)
       << "\" class=\"empty\">no data: the results lack the fields this chart needs</text></svg>";
    return os.str();
  }
  plot.Scale();
  plot.DrawAxes(os);
  plot.DrawFront(os);
  for (size_t i = 0; i < spec.series.size(); ++i) {
    plot.DrawSeries(os, spec.series[i], StyleAt(i));
  }
  plot.DrawEndLabels(os);
  os << legend.str() << "</svg>";
  return os.str();
}

std::string RenderStackedBars(const StackedBarSpec& spec) {
  double vmax = 0;
  for (const auto& row : spec.values) {
    double sum = 0;
    for (double v : row) sum += std::max(0.0, v);
    vmax = std::max(vmax, sum);
  }
  const double left = 14, right = 24, top = 36, row_h = 44;
  // Notes sit under the bar, so bars may use the full width.
  const double plot_w = kWidth - left - right;
  const double plot_h = row_h * static_cast<double>(spec.categories.size());
  std::vector<std::string> colors;
  for (size_t i = 0; i < spec.segments.size(); ++i) colors.push_back(kPalette[i % kPaletteSize]);
  std::ostringstream legend;
  const double legend_h = Legend(legend, spec.segments, top + plot_h + 52, colors);
  const double height = top + plot_h + 52 + legend_h;
  std::ostringstream os;
  OpenSvg(os, spec.id, spec.title, kWidth, height);
  if (!(vmax > 0)) {
    os << "<text x=\"" << Num(kWidth / 2) << "\" y=\"" << Num(top + 30)
       << "\" class=\"empty\">no data: the results carry no memory breakdown</text></svg>";
    return os.str();
  }
  const std::vector<double> ticks = NiceTicks(0, vmax, 6);
  const double v1 = ticks.back();
  auto X = [&](double v) { return left + v / v1 * plot_w; };
  for (double t : ticks) XGridLine(os, top, plot_h, X(t), t);
  os << "<text x=\"" << Num(left + plot_w / 2) << "\" y=\"" << Num(top + plot_h + 34)
     << "\" class=\"xlabel\">" << HtmlEscape(spec.value_label) << "</text>";
  for (size_t c = 0; c < spec.categories.size(); ++c) {
    const double y = top + row_h * static_cast<double>(c);
    os << "<text x=\"" << Num(left) << "\" y=\"" << Num(y + 12) << "\" class=\"barlabel\">"
       << HtmlEscape(spec.categories[c]);
    if (c < spec.bar_notes.size() && !spec.bar_notes[c].empty()) {
      os << " \u2014 " << HtmlEscape(spec.bar_notes[c]);
    }
    os << "</text>";
    double acc = 0;
    for (size_t s = 0; s < spec.segments.size() && s < spec.values[c].size(); ++s) {
      const double v = std::max(0.0, spec.values[c][s]);
      if (v <= 0) continue;
      os << "<rect class=\"mark\" data-series=\"" << Attr(spec.segments[s]) << "\" data-category=\""
         << Attr(spec.categories[c]) << "\" data-value=\"" << FormatNumber(v, 6) << "\" x=\""
         << Num(X(acc)) << "\" y=\"" << Num(y + 17) << "\" width=\"" << Num(X(acc + v) - X(acc))
         << "\" height=\"20\" fill=\"" << colors[s] << "\"><title>" << HtmlEscape(spec.segments[s])
         << ": " << FormatNumber(v) << "</title></rect>";
      acc += v;
    }
  }
  os << legend.str() << "</svg>";
  return os.str();
}

namespace {

// The largest finite value, upper interval end or reference line.
double GroupedMax(const GroupedBarSpec& spec) {
  double vmax = 0;
  for (const auto* rows : {&spec.values, &spec.hi}) {
    for (const auto& row : *rows) {
      for (double v : row) {
        if (std::isfinite(v)) vmax = std::max(vmax, v);
      }
    }
  }
  for (const auto& r : spec.references) vmax = std::max(vmax, r.value);
  return vmax;
}

// The smallest positive value or reference line (at most vmax).
double GroupedMin(const GroupedBarSpec& spec, double vmax) {
  double vmin = vmax;
  for (const auto& row : spec.values) {
    for (double v : row) {
      if (std::isfinite(v) && v > 0) vmin = std::min(vmin, v);
    }
  }
  for (const auto& r : spec.references) {
    if (r.value > 0) vmin = std::min(vmin, r.value);
  }
  return vmin;
}

// A grouped bar chart's value axis. A queueing tail (a TTFT of 40 s next
// to 100 ms) would flatten every other bar on a linear axis; past a 50x
// spread the axis is logarithmic.
class BarAxis {
 public:
  BarAxis(const GroupedBarSpec& spec, double vmax, double top, double plot_h)
      : top_(top), plot_h_(plot_h) {
    const double vmin = GroupedMin(spec, vmax);
    log_ = vmax / vmin > 50;
    if (log_) {
      // Half the smallest value as the floor keeps the smallest bar visible.
      l0_ = std::floor(std::log10(vmin / 2));
      l1_ = std::ceil(std::log10(vmax));
      if (l1_ <= l0_) l1_ = l0_ + 1;
      for (double e = l0_; e <= l1_ + 1e-9; ++e) ticks_.push_back(std::pow(10.0, e));
    } else {
      ticks_ = NiceTicks(0, vmax, 5);
    }
  }
  bool log() const { return log_; }
  const std::vector<double>& ticks() const { return ticks_; }
  double base() const { return log_ ? ticks_.front() : 0.0; }
  double Y(double v) const {
    if (log_) {
      return top_ + plot_h_ - (std::log10(std::max(v, ticks_.front())) - l0_) / (l1_ - l0_) * plot_h_;
    }
    return top_ + plot_h_ - v / ticks_.back() * plot_h_;
  }

 private:
  double top_, plot_h_;
  bool log_ = false;
  double l0_ = 0, l1_ = 1;
  std::vector<double> ticks_;
};

// Bar k of category c, with its interval when the spec gives one.
void DrawBar(std::ostringstream& os, const GroupedBarSpec& spec, const BarAxis& axis, size_t c,
             size_t k, double x, double bar_w, const std::string& color) {
  const double v = spec.values[c][k];
  if (!std::isfinite(v) || v < 0) return;
  os << "<rect class=\"mark\" data-series=\"" << Attr(spec.series[k]) << "\" data-category=\""
     << Attr(spec.categories[c]) << "\" data-value=\"" << FormatNumber(v, 6) << "\" x=\""
     << Num(x) << "\" y=\"" << Num(axis.Y(v)) << "\" width=\"" << Num(bar_w * 0.92)
     << "\" height=\"" << Num(std::max(0.5, axis.Y(axis.base()) - axis.Y(v))) << "\" fill=\""
     << color << "\"><title>" << HtmlEscape(spec.categories[c]) << " "
     << HtmlEscape(spec.series[k]) << ": " << FormatNumber(v) << " "
     << HtmlEscape(spec.value_label) << "</title></rect>";
  const double lo = c < spec.lo.size() && k < spec.lo[c].size() ? spec.lo[c][k] : NAN;
  const double hi = c < spec.hi.size() && k < spec.hi[c].size() ? spec.hi[c][k] : NAN;
  if (!(std::isfinite(lo) && std::isfinite(hi) && hi >= lo)) return;
  const double bx = x + bar_w * 0.46;
  const double cap = std::max(1.5, bar_w * 0.25);
  os << "<path class=\"interval\" data-lo=\"" << FormatNumber(lo, 6) << "\" data-hi=\""
     << FormatNumber(hi, 6) << "\" d=\"M" << Num(bx) << " " << Num(axis.Y(lo)) << "V"
     << Num(axis.Y(hi)) << "M" << Num(bx - cap) << " " << Num(axis.Y(lo)) << "H" << Num(bx + cap)
     << "M" << Num(bx - cap) << " " << Num(axis.Y(hi)) << "H" << Num(bx + cap) << "\"/>";
}

// A category's name under its group, turned when it does not fit.
void CategoryLabel(std::ostringstream& os, const std::string& name, double cx, double ly,
                   bool turn) {
  if (turn) {
    os << "<text transform=\"translate(" << Num(cx + 4) << " " << Num(ly - 4)
       << ") rotate(45)\" class=\"barlabel\">" << HtmlEscape(name) << "</text>";
  } else {
    os << "<text x=\"" << Num(cx) << "\" y=\"" << Num(ly) << "\" class=\"xtick\">"
       << HtmlEscape(name) << "</text>";
  }
}

}  // namespace

std::string RenderGroupedBars(const GroupedBarSpec& spec) {
  const double W = spec.width;
  const double vmax = GroupedMax(spec);
  const double left = 60, right = 12, top = 36, plot_h = 180;
  const double plot_w = W - left - right;
  const double n = static_cast<double>(std::max<size_t>(1, spec.categories.size()));
  const double group_w = plot_w / n;
  // Category labels that do not fit under their group are turned, so many
  // groups never overlap their names.
  size_t longest = 0;
  for (const auto& c : spec.categories) longest = std::max(longest, c.size());
  const bool turn = kCharWidth * static_cast<double>(longest) > group_w * 0.8;
  const double label_h = turn ? 10 + kCharWidth * 0.75 * static_cast<double>(longest) : 20;
  std::vector<std::string> colors;
  for (size_t i = 0; i < spec.series.size(); ++i) colors.push_back(kPalette[i % kPaletteSize]);
  std::ostringstream legend;
  const double legend_top = top + plot_h + label_h + 34;
  const double legend_h = Legend(legend, spec.series, legend_top, colors, W);
  std::ostringstream os;
  OpenSvg(os, spec.id, spec.title, W, legend_top + legend_h);
  if (!(vmax > 0)) {
    os << "<text x=\"" << Num(W / 2) << "\" y=\"" << Num(top + plot_h / 2)
       << "\" class=\"empty\">no data: the results lack this latency</text></svg>";
    return os.str();
  }
  const BarAxis axis(spec, vmax, top, plot_h);
  if (axis.log()) {
    os << "<text x=\"" << Num(left + 4) << "\" y=\"" << Num(top - 4) << "\" class=\"scale\">"
       << "log scale</text>";
  }
  for (double t : axis.ticks()) YGridLine(os, left, plot_w, axis.Y(t), t);
  FrameAndYLabel(os, left, top, plot_w, plot_h, spec.value_label);
  const double nseries = static_cast<double>(std::max<size_t>(1, spec.series.size()));
  const double bar_w = std::min(18.0, group_w * 0.8 / nseries);
  for (size_t c = 0; c < spec.categories.size(); ++c) {
    const double gx = left + group_w * static_cast<double>(c);
    const double x0 = gx + (group_w - bar_w * nseries) / 2;
    for (size_t k = 0; k < spec.series.size() && k < spec.values[c].size(); ++k) {
      DrawBar(os, spec, axis, c, k, x0 + bar_w * static_cast<double>(k), bar_w, colors[k]);
    }
    CategoryLabel(os, spec.categories[c], gx + group_w / 2, top + plot_h + 14, turn);
  }
  for (const auto& r : spec.references) {
    os << "<line class=\"slo\" data-value=\"" << FormatNumber(r.value, 6) << "\" x1=\"" << Num(left)
       << "\" x2=\"" << Num(left + plot_w) << "\" y1=\"" << Num(axis.Y(r.value)) << "\" y2=\""
       << Num(axis.Y(r.value)) << "\"/><text x=\"" << Num(left + plot_w - 4) << "\" y=\""
       << Num(axis.Y(r.value) - 4) << "\" class=\"slolabel\">" << HtmlEscape(r.label) << "</text>";
  }
  os << legend.str() << "</svg>";
  return os.str();
}

}  // namespace capplan::report
