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

constexpr double kWidth = 760;
constexpr double kCharWidth = 6.6;  // average glyph width at 12px sans-serif

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

std::string Attr(const std::string& s) { return HtmlEscape(s); }

// Legend laid out in rows that wrap at the chart width; returns its height.
double Legend(std::ostringstream& os, const std::vector<std::string>& names, double top,
              const std::vector<std::string>& colors, double width = kWidth) {
  double x = 10, y = top;
  for (size_t i = 0; i < names.size(); ++i) {
    const double w = 22 + kCharWidth * static_cast<double>(names[i].size()) + 14;
    if (x + w > width - 10 && x > 10) {
      x = 10;
      y += 18;
    }
    os << "<rect x=\"" << Num(x) << "\" y=\"" << Num(y - 9) << "\" width=\"12\" height=\"12\" "
       << "fill=\"" << colors[i] << "\"/>"
       << "<text x=\"" << Num(x + 16) << "\" y=\"" << Num(y + 1) << "\" class=\"legend\">"
       << HtmlEscape(names[i]) << "</text>";
    x += w;
  }
  return y - top + 18;
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

std::string RenderXYChart(const XYChartSpec& spec) {
  double xmin = INFINITY, xmax = -INFINITY, ymax = 0;
  size_t n_points = 0;
  for (const auto& s : spec.series) {
    for (const auto& [x, y] : s.points) {
      if (spec.log2_x && !(x > 0)) continue;
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      ymax = std::max(ymax, y);
      ++n_points;
    }
  }
  const double left = 78, right = 24, top = 36, plot_h = 260;
  const double plot_w = kWidth - left - right;
  std::ostringstream os;
  std::vector<std::string> names, colors;
  for (size_t i = 0; i < spec.series.size(); ++i) {
    names.push_back(spec.series[i].name);
    colors.push_back(kPalette[i % kPaletteSize]);
  }
  if (!spec.front.empty()) {
    names.push_back(spec.front_label);
    colors.push_back("#222222");
  }
  std::ostringstream legend;
  const double legend_h = Legend(legend, names, top + plot_h + 58, colors);
  const double height = top + plot_h + 58 + legend_h;

  os << "<svg class=\"chart\" data-chart=\"" << Attr(spec.id) << "\" viewBox=\"0 0 " << Num(kWidth)
     << " " << Num(height) << "\" role=\"img\" aria-label=\"" << Attr(spec.title)
     << "\" xmlns=\"http://www.w3.org/2000/svg\">";
  os << "<title>" << HtmlEscape(spec.title) << "</title>";
  os << "<text x=\"" << Num(kWidth / 2) << "\" y=\"20\" class=\"ctitle\">" << HtmlEscape(spec.title)
     << "</text>";
  if (n_points == 0) {
    os << "<text x=\"" << Num(kWidth / 2) << "\" y=\"" << Num(top + plot_h / 2)
       << "\" class=\"empty\">no data: the results lack the fields this chart needs</text></svg>";
    return os.str();
  }
  // Axes map.
  double lx0 = 0, lx1 = 1;
  std::vector<double> xticks;
  if (spec.log2_x) {
    lx0 = std::floor(std::log2(xmin));
    lx1 = std::ceil(std::log2(xmax));
    if (lx1 <= lx0) lx1 = lx0 + 1;
    const int stride = std::max(1, static_cast<int>(std::ceil((lx1 - lx0) / 10)));
    for (double e = lx0; e <= lx1 + 1e-9; e += stride) xticks.push_back(std::exp2(e));
  } else {
    xticks = NiceTicks(std::min(0.0, xmin), xmax, 6);
    lx0 = xticks.front();
    lx1 = xticks.back();
  }
  auto X = [&](double x) {
    const double v = spec.log2_x ? std::log2(x) : x;
    return left + (v - lx0) / (lx1 - lx0) * plot_w;
  };
  const std::vector<double> yticks = NiceTicks(0, ymax > 0 ? ymax : 1, 5);
  const double y1 = yticks.back();
  auto Y = [&](double y) { return top + plot_h - y / y1 * plot_h; };

  os << "<g class=\"axes\">";
  for (double t : yticks) {
    os << "<line x1=\"" << Num(left) << "\" x2=\"" << Num(left + plot_w) << "\" y1=\"" << Num(Y(t))
       << "\" y2=\"" << Num(Y(t)) << "\" class=\"grid\"/>"
       << "<text x=\"" << Num(left - 6) << "\" y=\"" << Num(Y(t) + 4) << "\" class=\"ytick\">"
       << FormatNumber(t) << "</text>";
  }
  for (double t : xticks) {
    os << "<line x1=\"" << Num(X(t)) << "\" x2=\"" << Num(X(t)) << "\" y1=\"" << Num(top)
       << "\" y2=\"" << Num(top + plot_h) << "\" class=\"grid\"/>"
       << "<text x=\"" << Num(X(t)) << "\" y=\"" << Num(top + plot_h + 16) << "\" class=\"xtick\">"
       << FormatNumber(t) << "</text>";
  }
  os << "<rect x=\"" << Num(left) << "\" y=\"" << Num(top) << "\" width=\"" << Num(plot_w)
     << "\" height=\"" << Num(plot_h) << "\" class=\"frame\"/>";
  os << "<text x=\"" << Num(left + plot_w / 2) << "\" y=\"" << Num(top + plot_h + 36)
     << "\" class=\"xlabel\">" << HtmlEscape(spec.x_label) << "</text>";
  os << "<text transform=\"translate(16 " << Num(top + plot_h / 2) << ") rotate(-90)\" "
     << "class=\"ylabel\">" << HtmlEscape(spec.y_label) << "</text></g>";

  if (!spec.front.empty()) {
    // Step envelope: from each front point go left at its height, so the
    // area under the line is what the front achieves.
    std::vector<std::pair<double, double>> f = spec.front;
    std::sort(f.begin(), f.end());
    std::ostringstream pts;
    for (size_t i = 0; i < f.size(); ++i) {
      if (i > 0) pts << Num(X(f[i - 1].first)) << "," << Num(Y(f[i].second)) << " ";
      pts << Num(X(f[i].first)) << "," << Num(Y(f[i].second)) << " ";
    }
    os << "<polyline points=\"" << pts.str() << "\" class=\"front\"/>";
  }
  std::map<std::pair<long, long>, std::vector<std::string>> end_labels;
  for (size_t i = 0; i < spec.series.size(); ++i) {
    const auto& s = spec.series[i];
    const char* color = kPalette[i % kPaletteSize];
    if (s.connect && s.points.size() > 1) {
      std::ostringstream pts;
      for (const auto& [x, y] : s.points) {
        if (spec.log2_x && !(x > 0)) continue;
        pts << Num(X(x)) << "," << Num(Y(y)) << " ";
      }
      os << "<polyline points=\"" << pts.str() << "\" fill=\"none\" stroke=\"" << color
         << "\" stroke-width=\"2\"/>";
    }
    for (const auto& [x, y] : s.points) {
      if (spec.log2_x && !(x > 0)) continue;
      os << "<circle class=\"mark\" data-series=\"" << Attr(s.name) << "\" data-x=\""
         << FormatNumber(x, 6) << "\" data-y=\"" << FormatNumber(y, 6) << "\" cx=\"" << Num(X(x))
         << "\" cy=\"" << Num(Y(y)) << "\" r=\"4.5\" fill=\"" << color << "\"><title>"
         << HtmlEscape(s.name) << ": " << FormatNumber(x) << ", " << FormatNumber(y)
         << "</title></circle>";
    }
    // Short series names also sit at the series' last point, so a reader
    // need not match colours against the legend.
    for (auto it = s.points.rbegin(); it != s.points.rend(); ++it) {
      if (spec.log2_x && !(it->first > 0)) continue;
      if (s.name.size() <= 12) {
        end_labels[{std::lround(X(it->first)), std::lround(Y(it->second))}].push_back(s.name);
      }
      break;
    }
  }
  // Series ending on the same spot share one label ("B, E, F").
  for (const auto& [pos, names] : end_labels) {
    std::string text;
    for (const auto& n : names) text += (text.empty() ? "" : ", ") + n;
    os << "<text x=\"" << Num(static_cast<double>(pos.first) + 7) << "\" y=\""
       << Num(static_cast<double>(pos.second) - 7) << "\" class=\"plabel\">" << HtmlEscape(text)
       << "</text>";
  }
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
  os << "<svg class=\"chart\" data-chart=\"" << Attr(spec.id) << "\" viewBox=\"0 0 " << Num(kWidth)
     << " " << Num(height) << "\" role=\"img\" aria-label=\"" << Attr(spec.title)
     << "\" xmlns=\"http://www.w3.org/2000/svg\">";
  os << "<title>" << HtmlEscape(spec.title) << "</title>";
  os << "<text x=\"" << Num(kWidth / 2) << "\" y=\"20\" class=\"ctitle\">" << HtmlEscape(spec.title)
     << "</text>";
  if (!(vmax > 0)) {
    os << "<text x=\"" << Num(kWidth / 2) << "\" y=\"" << Num(top + 30)
       << "\" class=\"empty\">no data: the results carry no memory breakdown</text></svg>";
    return os.str();
  }
  const std::vector<double> ticks = NiceTicks(0, vmax, 6);
  const double v1 = ticks.back();
  auto X = [&](double v) { return left + v / v1 * plot_w; };
  for (double t : ticks) {
    os << "<line x1=\"" << Num(X(t)) << "\" x2=\"" << Num(X(t)) << "\" y1=\"" << Num(top)
       << "\" y2=\"" << Num(top + plot_h) << "\" class=\"grid\"/>"
       << "<text x=\"" << Num(X(t)) << "\" y=\"" << Num(top + plot_h + 16) << "\" class=\"xtick\">"
       << FormatNumber(t) << "</text>";
  }
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

std::string RenderGroupedBars(const GroupedBarSpec& spec) {
  const double W = spec.width;
  double vmax = 0;
  for (const auto& row : spec.values) {
    for (double v : row) {
      if (std::isfinite(v)) vmax = std::max(vmax, v);
    }
  }
  for (const auto& row : spec.hi) {
    for (double v : row) {
      if (std::isfinite(v)) vmax = std::max(vmax, v);
    }
  }
  for (const auto& r : spec.references) vmax = std::max(vmax, r.value);
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
  const double height = legend_top + legend_h;
  std::ostringstream os;
  os << "<svg class=\"chart\" data-chart=\"" << Attr(spec.id) << "\" viewBox=\"0 0 " << Num(W)
     << " " << Num(height) << "\" role=\"img\" aria-label=\"" << Attr(spec.title)
     << "\" xmlns=\"http://www.w3.org/2000/svg\">";
  os << "<title>" << HtmlEscape(spec.title) << "</title>";
  os << "<text x=\"" << Num(W / 2) << "\" y=\"20\" class=\"ctitle\">" << HtmlEscape(spec.title)
     << "</text>";
  if (!(vmax > 0)) {
    os << "<text x=\"" << Num(W / 2) << "\" y=\"" << Num(top + plot_h / 2)
       << "\" class=\"empty\">no data: the results lack this latency</text></svg>";
    return os.str();
  }
  // A queueing tail (a TTFT of 40 s next to 100 ms) would flatten every
  // other bar on a linear axis; past a 50x spread the axis is logarithmic.
  double vmin = vmax;
  for (const auto& row : spec.values) {
    for (double v : row) {
      if (std::isfinite(v) && v > 0) vmin = std::min(vmin, v);
    }
  }
  for (const auto& r : spec.references) {
    if (r.value > 0) vmin = std::min(vmin, r.value);
  }
  const bool log_y = vmax / vmin > 50;
  std::vector<double> ticks;
  double l0 = 0, l1 = 1;
  if (log_y) {
    // Half the smallest value as the floor keeps the smallest bar visible.
    l0 = std::floor(std::log10(vmin / 2));
    l1 = std::ceil(std::log10(vmax));
    if (l1 <= l0) l1 = l0 + 1;
    for (double e = l0; e <= l1 + 1e-9; ++e) ticks.push_back(std::pow(10.0, e));
  } else {
    ticks = NiceTicks(0, vmax, 5);
  }
  const double v1 = ticks.back();
  auto Y = [&](double v) {
    if (log_y)
      return top + plot_h - (std::log10(std::max(v, ticks.front())) - l0) / (l1 - l0) * plot_h;
    return top + plot_h - v / v1 * plot_h;
  };
  const double base = log_y ? ticks.front() : 0.0;
  if (log_y) {
    os << "<text x=\"" << Num(left + 4) << "\" y=\"" << Num(top - 4) << "\" class=\"scale\">"
       << "log scale</text>";
  }
  for (double t : ticks) {
    os << "<line x1=\"" << Num(left) << "\" x2=\"" << Num(left + plot_w) << "\" y1=\"" << Num(Y(t))
       << "\" y2=\"" << Num(Y(t)) << "\" class=\"grid\"/>"
       << "<text x=\"" << Num(left - 6) << "\" y=\"" << Num(Y(t) + 4) << "\" class=\"ytick\">"
       << FormatNumber(t) << "</text>";
  }
  os << "<rect x=\"" << Num(left) << "\" y=\"" << Num(top) << "\" width=\"" << Num(plot_w)
     << "\" height=\"" << Num(plot_h) << "\" class=\"frame\"/>";
  os << "<text transform=\"translate(16 " << Num(top + plot_h / 2) << ") rotate(-90)\" "
     << "class=\"ylabel\">" << HtmlEscape(spec.value_label) << "</text>";
  const double nseries = static_cast<double>(std::max<size_t>(1, spec.series.size()));
  const double bar_w = std::min(18.0, group_w * 0.8 / nseries);
  for (size_t c = 0; c < spec.categories.size(); ++c) {
    const double gx = left + group_w * static_cast<double>(c);
    const double x0 = gx + (group_w - bar_w * nseries) / 2;
    for (size_t k = 0; k < spec.series.size() && k < spec.values[c].size(); ++k) {
      const double v = spec.values[c][k];
      if (!std::isfinite(v) || v < 0) continue;
      os << "<rect class=\"mark\" data-series=\"" << Attr(spec.series[k]) << "\" data-category=\""
         << Attr(spec.categories[c]) << "\" data-value=\"" << FormatNumber(v, 6) << "\" x=\""
         << Num(x0 + bar_w * static_cast<double>(k)) << "\" y=\"" << Num(Y(v)) << "\" width=\""
         << Num(bar_w * 0.92) << "\" height=\"" << Num(std::max(0.5, Y(base) - Y(v)))
         << "\" fill=\"" << colors[k] << "\"><title>" << HtmlEscape(spec.categories[c]) << " "
         << HtmlEscape(spec.series[k]) << ": " << FormatNumber(v) << " "
         << HtmlEscape(spec.value_label) << "</title></rect>";
      const double lo = c < spec.lo.size() && k < spec.lo[c].size() ? spec.lo[c][k] : NAN;
      const double hi = c < spec.hi.size() && k < spec.hi[c].size() ? spec.hi[c][k] : NAN;
      if (std::isfinite(lo) && std::isfinite(hi) && hi >= lo) {
        const double bx = x0 + bar_w * (static_cast<double>(k) + 0.46);
        const double cap = std::max(1.5, bar_w * 0.25);
        os << "<path class=\"interval\" data-lo=\"" << FormatNumber(lo, 6) << "\" data-hi=\""
           << FormatNumber(hi, 6) << "\" d=\"M" << Num(bx) << " " << Num(Y(lo)) << "V" << Num(Y(hi))
           << "M" << Num(bx - cap) << " " << Num(Y(lo)) << "H" << Num(bx + cap) << "M"
           << Num(bx - cap) << " " << Num(Y(hi)) << "H" << Num(bx + cap) << "\"/>";
      }
    }
    const double cx = gx + group_w / 2, ly = top + plot_h + 14;
    if (turn) {
      os << "<text transform=\"translate(" << Num(cx + 4) << " " << Num(ly - 4)
         << ") rotate(45)\" class=\"barlabel\">" << HtmlEscape(spec.categories[c]) << "</text>";
    } else {
      os << "<text x=\"" << Num(cx) << "\" y=\"" << Num(ly) << "\" class=\"xtick\">"
         << HtmlEscape(spec.categories[c]) << "</text>";
    }
  }
  for (const auto& r : spec.references) {
    os << "<line class=\"slo\" data-value=\"" << FormatNumber(r.value, 6) << "\" x1=\"" << Num(left)
       << "\" x2=\"" << Num(left + plot_w) << "\" y1=\"" << Num(Y(r.value)) << "\" y2=\""
       << Num(Y(r.value)) << "\"/><text x=\"" << Num(left + plot_w - 4) << "\" y=\""
       << Num(Y(r.value) - 4) << "\" class=\"slolabel\">" << HtmlEscape(r.label) << "</text>";
  }
  os << legend.str() << "</svg>";
  return os.str();
}

}  // namespace capplan::report
