// The HTML report: one file a planner can open offline, mail, or print.
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "common/units.h"
#include "report/brief.h"
#include "report/formats.h"
#include "report/svg_chart.h"
#include "report/text_util.h"

namespace capplan::report {
namespace {


// Charts scale with the page (viewBox, width 100%); a table wider than the
// page scrolls inside its own box (div.table-wrap), never the page. Cells
// wrap between words only: breaking "sglang" into "sgl/an/g" to avoid a
// scroll bar reads worse than the scroll bar.
constexpr const char* kCss = R"css(
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
       max-width: 1100px; padding: 16px; color: #111; line-height: 1.4; }
h1 { font-size: 1.6em; margin: 0.2em 0; } h2 { font-size: 1.25em; margin-top: 1.6em;
       border-bottom: 1px solid #ccc; }
p.note, ul.notes { color: #333; font-size: 0.92em; }
figure { margin: 1em 0; } figcaption { font-size: 0.9em; color: #333; }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart text { font-family: inherit; font-size: 12px; fill: #111; }
svg.chart .ctitle { font-size: 14px; font-weight: 600; text-anchor: middle; }
svg.chart .xtick, svg.chart .xlabel, svg.chart .ylabel, svg.chart .empty { text-anchor: middle; }
svg.chart .ytick { text-anchor: end; }
svg.chart .grid { stroke: #e3e3e3; stroke-width: 1; }
svg.chart .frame { fill: none; stroke: #888; }
svg.chart .front { fill: none; stroke: #222; stroke-width: 1.5; stroke-dasharray: 5 3; }
div.table-wrap { overflow-x: auto; max-width: 100%; margin: 0.5em 0; }
table { border-collapse: collapse; width: 100%; font-size: 0.85em; }
div.charts { display: grid; gap: 8px 16px;
             grid-template-columns: repeat(auto-fit, minmax(min(100%, 460px), 1fr)); }
div.charts figure { margin: 0.4em 0; }
svg.chart .slo { stroke: #D55E00; stroke-width: 1.5; stroke-dasharray: 6 4; }
svg.chart .slolabel { text-anchor: end; fill: #D55E00; font-weight: 600; }
svg.chart .plabel { font-weight: 600; }
svg.chart .interval { stroke: #222; stroke-width: 1.2; fill: none; }
svg.chart .scale { fill: #555; font-style: italic; }
section.answer { background: #f5f8fc; border-left: 4px solid #0072B2; padding: 4px 12px;
                 margin: 0.8em 0; }
section.answer h2 { border: none; margin: 0.3em 0; font-size: 1.1em; }
section.answer ul { margin: 0.3em 0; padding-left: 1.2em; } section.answer li { margin: 0.2em 0; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; vertical-align: top;
         overflow-wrap: break-word; }
th { background: #f2f2f2; }
td.long { overflow-wrap: anywhere; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
footer { margin-top: 2em; font-size: 0.8em; color: #555; overflow-wrap: anywhere; }
#capplan-selfcheck { display: none; }
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  h2 { break-after: avoid; }
  figure, tr, svg.chart { break-inside: avoid; }
  th { background: #eee; -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
)css";

// Runs once the page is laid out: records page overflow, chart marks and
// script errors where a headless browser's --dump-dom can read them, and
// logs one console line so a test can prove console capture works.
constexpr const char* kSelfCheck = R"js(
(function () {
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });
  var de = document.documentElement;
  var r = { scroll_width: de.scrollWidth, client_width: de.clientWidth, overflowing: [],
            charts: {}, tables: document.querySelectorAll('table').length, errors: errors };
  // Tables scroll inside div.table-wrap, so the wrapper is what must fit.
  document.querySelectorAll('svg.chart, div.table-wrap, h1, h2, p, li, figure').forEach(function (el) {
    var b = el.getBoundingClientRect();
    if (b.right > de.clientWidth + 1) r.overflowing.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : ''));
  });
  // Tables wider than the page scroll inside their box; recorded so a
  // desktop-width check can insist that none needs to.
  r.scrolling_tables = [];
  document.querySelectorAll('div.table-wrap').forEach(function (w) {
    if (w.scrollWidth > w.clientWidth + 1) r.scrolling_tables.push(w.firstChild.id);
  });
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    var marks = svg.querySelectorAll('.mark'), drawn = 0;
    marks.forEach(function (m) { var b = m.getBBox(); if (b.width > 0 && b.height > 0) drawn++; });
    r.charts[svg.getAttribute('data-chart')] = drawn;
  });
  // Each series' colour and marker per chart (a reader tells series apart
  // by that pair alone).
  r.series_styles = {};
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    var styles = {};
    svg.querySelectorAll('.mark[data-marker]').forEach(function (m) {
      styles[m.getAttribute('data-series')] = m.getAttribute('fill') + ' ' + m.getAttribute('data-marker');
    });
    if (Object.keys(styles).length) r.series_styles[svg.getAttribute('data-chart')] = styles;
  });
  // Warnings: the sections holding them and whether any text repeats.
  var texts = {}, repeated = 0;
  document.querySelectorAll('#table-warnings tbody tr').forEach(function (tr) {
    var t = tr.cells[0].textContent;
    if (texts[t]) repeated++;
    texts[t] = true;
  });
  r.warnings = { sections: document.querySelectorAll('h2#warnings').length,
                 tables: document.querySelectorAll('#table-warnings').length,
                 rows: Object.keys(texts).length, repeated: repeated,
                 columns: Array.prototype.map.call(document.querySelectorAll('#table-warnings th'),
                                                   function (th) { return th.textContent; }) };
  // Tables with a column whose header is empty or missing.
  r.unlabelled_columns = [];
  document.querySelectorAll('table').forEach(function (t) {
    var heads = t.querySelectorAll('thead th'), bad = false;
    heads.forEach(function (th) { if (!th.textContent.trim()) bad = true; });
    t.querySelectorAll('tbody tr').forEach(function (tr) { if (tr.cells.length > heads.length) bad = true; });
    if (bad) r.unlabelled_columns.push(t.id);
  });
  document.getElementById('capplan-selfcheck').textContent = JSON.stringify(r);
  console.log('capplan-selfcheck ' + JSON.stringify(r));
})();
)js";

bool LooksNumeric(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == 'e')) {
      return false;
    }
  }
  return true;
}

// A cell holding a word longer than a column should be (a file path, a
// deployment string) may break inside it; other words never split.
bool HasLongWord(const std::string& s) {
  size_t run = 0;
  for (char c : s) {
    run = c == ' ' ? 0 : run + 1;
    if (run > 18) return true;
  }
  return false;
}

void WriteTable(std::ostringstream& os, const Table& t) {
  os << "<div class=\"table-wrap\"><table id=\"table-" << HtmlEscape(t.id) << "\"><thead><tr>";
  // Break long snake_case headers at underscores rather than mid-word.
  for (const auto& c : t.columns) {
    std::string h = HtmlEscape(c);
    for (size_t p = h.find('_'); p != std::string::npos; p = h.find('_', p + 6)) {
      h.insert(p + 1, "<wbr>");
    }
    os << "<th>" << h << "</th>";
  }
  os << "</tr></thead><tbody>";
  for (const auto& row : t.rows) {
    os << "<tr>";
    for (const auto& cell : row) {
      const char* cls = LooksNumeric(cell)  ? " class=\"num\""
                        : HasLongWord(cell) ? " class=\"long\""
                                            : "";
      os << "<td" << cls << ">" << HtmlEscape(cell) << "</td>";
    }
    os << "</tr>";
  }
  os << "</tbody></table></div>";
}

const Table* FindTable(const std::vector<Table>& tables, const std::string& id) {
  for (const auto& t : tables) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

void Section(std::ostringstream& os, const std::vector<Table>& tables, const std::string& id) {
  const Table* t = FindTable(tables, id);
  if (t == nullptr) return;
  if (!t->note.empty()) os << "<p class=\"note\">" << HtmlEscape(t->note) << "</p>";
  WriteTable(os, *t);
}

std::string MemoryChart(const Analysis& a) {
  StackedBarSpec spec;
  spec.id = "memory";
  spec.title = "Memory per GPU";
  spec.value_label = "GiB per GPU";
  std::set<std::string> components;
  for (const auto& c : a.configs) {
    if (c.first->memory) {
      for (const auto& [k, v] : c.first->memory->weights_by_component) components.insert(k);
    }
  }
  for (const auto& k : components) spec.segments.push_back("weights: " + k);
  const bool split = !components.empty();
  if (!split) spec.segments.push_back("weights");
  for (const char* s : {"reserve", "KV pool", "free"}) spec.segments.push_back(s);
  for (const auto& c : a.configs) {
    const Summary& s = *c.first;
    if (!s.memory) continue;
    const MemoryPerGpu& m = *s.memory;
    std::vector<double> v;
    double comp_sum = 0;
    for (const auto& k : components) {
      auto it = m.weights_by_component.find(k);
      const double b = it == m.weights_by_component.end() ? 0 : it->second;
      comp_sum += b;
      v.push_back(b / kBytesPerGiB);
    }
    // Components that do not add up to the total (rounding, unlisted
    // buffers) go to the last component rather than vanish.
    if (split && m.weights_bytes > comp_sum) v.back() += (m.weights_bytes - comp_sum) / kBytesPerGiB;
    if (!split) v.push_back(m.weights_bytes / kBytesPerGiB);
    v.push_back(m.reserve_bytes / kBytesPerGiB);
    v.push_back(m.kv_pool_bytes / kBytesPerGiB);
    const double used = m.weights_bytes + m.reserve_bytes + m.kv_pool_bytes;
    v.push_back(m.gpu_memory_bytes > used ? (m.gpu_memory_bytes - used) / kBytesPerGiB : 0);
    spec.categories.push_back(c.short_label);
    spec.values.push_back(v);
    spec.bar_notes.push_back(
        s.kv_capacity_tokens ? "KV capacity " + FormatNumber(*s.kv_capacity_tokens, 9) + " tokens"
                             : "");
  }
  return RenderStackedBars(spec);
}

std::string ThroughputChart(const Analysis& a) {
  XYChartSpec spec;
  spec.id = "throughput";
  spec.title = "Output throughput per GPU vs concurrency";
  spec.x_label = "offered concurrency (requests in flight)";
  spec.y_label = "output tokens/s per GPU";
  bool all_positive = true;
  for (const auto& c : a.configs) {
    XYSeries s{c.short_label, {}, true};
    for (int i : c.points) {
      const Summary& r = a.results[i];
      if (!r.concurrency) continue;
      if (*r.concurrency <= 0) all_positive = false;
      s.points.push_back({*r.concurrency, r.output_throughput_per_gpu});
    }
    spec.series.push_back(std::move(s));
  }
  spec.log2_x = all_positive;
  return RenderXYChart(spec);
}

std::string ParetoChart(const Analysis& a) {
  XYChartSpec spec;
  spec.id = "pareto";
  const bool total = a.options.pareto_tokens == "total";
  spec.title =
      std::string(total ? "Input+output" : "Output") + " tokens/s per GPU vs tokens/s per user";
  spec.x_label = "tokens/s per user = 1000 / median TPOT (ms)";
  spec.y_label = std::string(total ? "input+output" : "output") + " tokens/s per GPU";
  spec.front_label = "Pareto front";
  for (const auto& c : a.configs) {
    XYSeries s{c.short_label, {}, true};
    for (int i : c.points) {
      const Point& p = a.points[i];
      if (!(p.tokens_per_s_per_user > 0)) continue;
      s.points.push_back({p.tokens_per_s_per_user, p.pareto_y});
      if (p.on_pareto_front) spec.front.push_back({p.tokens_per_s_per_user, p.pareto_y});
    }
    spec.series.push_back(std::move(s));
  }
  return RenderXYChart(spec);
}

std::string MetricTitle(const std::string& metric) {
  if (metric == "ttft") return "TTFT";
  if (metric == "tpot") return "TPOT";
  if (metric == "itl") return "ITL";
  return "E2E";
}

// p50/p90/p99 of one latency metric for every result, grouped by result
// ("A@16": configuration A at concurrency 16), with each SLO on the metric
// drawn across as a dashed line.
std::string LatencyChart(const Analysis& a, const std::string& metric) {
  GroupedBarSpec spec;
  spec.id = "latency_" + metric;
  spec.title = MetricTitle(metric) + " percentiles";
  spec.value_label = "ms";
  spec.series = {"p50", "p90", "p99"};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::set<std::pair<double, std::string>> slos;
  for (const auto& c : a.configs) {
    for (int i : c.points) {
      const Summary& s = a.results[i];
      std::vector<double> v, lo, hi;
      bool any = false;
      for (const char* stat : {"median_", "p90_", "p99_"}) {
        const auto it = s.latency_ms.find(stat + metric);
        v.push_back(it == s.latency_ms.end() ? nan : it->second);
        any = any || it != s.latency_ms.end();
        const auto iv = s.latency_interval_ms.find(stat + metric);
        lo.push_back(iv == s.latency_interval_ms.end() ? nan : iv->second.first);
        hi.push_back(iv == s.latency_interval_ms.end() ? nan : iv->second.second);
      }
      if (!any) continue;
      spec.lo.push_back(lo);
      spec.hi.push_back(hi);
      std::string cat = c.short_label;
      if (c.points.size() > 1 && s.concurrency) cat += "@" + ConcurrencyText(s);
      spec.categories.push_back(cat);
      spec.values.push_back(v);
      const auto slo = s.slo_ms.find(metric + "_ms");
      if (slo != s.slo_ms.end()) {
        const auto stat = s.slo_stat.find(metric);
        const std::string what = stat == s.slo_stat.end() ? "" : " " + stat->second;
        slos.insert({slo->second, "SLO" + what + " \u2264 " + FormatNumber(slo->second) + " ms"});
      }
    }
  }
  for (const auto& [value, label] : slos) spec.references.push_back({value, label});
  return RenderGroupedBars(spec);
}

// Joules per output token per result: the facility's and the GPU boards'.
std::string EnergyChart(const Analysis& a) {
  GroupedBarSpec spec;
  spec.id = "energy";
  spec.title = "Energy per output token";
  spec.value_label = "J";
  spec.series = {"facility", "GPU boards"};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& c : a.configs) {
    for (int i : c.points) {
      const Summary& s = a.results[i];
      if (!s.joules_per_output_token) continue;
      std::string cat = c.short_label;
      if (c.points.size() > 1 && s.concurrency) cat += "@" + ConcurrencyText(s);
      spec.categories.push_back(cat);
      spec.values.push_back(
          {*s.joules_per_output_token, s.gpu_joules_per_output_token.value_or(nan)});
      spec.lo.push_back({nan, nan});
      spec.hi.push_back({nan, nan});
    }
  }
  return RenderGroupedBars(spec);
}

// Where a result came from, without a directory of the machine that made
// the report: a relative path as the user gave it, else the result's name.
std::string SourceText(const Summary& s) {
  if (!IsAbsolutePath(s.origin)) return s.origin;
  return s.id;
}

}  // namespace

std::string RenderHtml(const Analysis& a, const std::vector<Table>& tables) {
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
     << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
     << "<title>" << HtmlEscape(a.options.title) << "</title><style>" << kCss
     << "</style></head><body>\n";
  os << "<h1>" << HtmlEscape(a.options.title) << "</h1>\n";
  os << "<section class=\"answer\" id=\"summary\"><h2>Summary</h2><ul>";
  for (const auto& line : SummaryLines(a)) os << "<li>" << HtmlEscape(line) << "</li>";
  os << "</ul></section>\n";
  os << "<h2 id=\"deployments\">Configurations</h2>";
  Section(os, tables, "deployments");
  os << "<ul class=\"notes\">";
  for (const auto& n : ReportNotes(a)) os << "<li>" << HtmlEscape(n) << "</li>";
  os << "</ul>\n";
  os << "\n<h2 id=\"memory\">Memory per GPU and KV capacity</h2><figure>" << MemoryChart(a)
     << "<figcaption>Weights by component, reserve (activations, graphs, runtime), KV pool "
        "and what is left of HBM, per GPU.</figcaption></figure>";
  Section(os, tables, "memory");
  os << "\n<h2 id=\"throughput\">Throughput</h2><figure>" << ThroughputChart(a)
     << "<figcaption>Output (generated) tokens only, per GPU of the deployment.</figcaption>"
        "</figure><figure>"
     << ParetoChart(a)
     << "<figcaption>Each point is one result; the dashed line is the Pareto front (no other "
        "point is both more interactive and more productive per GPU).</figcaption></figure>";
  Section(os, tables, "throughput");
  os << "\n<h2 id=\"latency\">Latency</h2><div class=\"charts\">";
  for (const char* metric : {"ttft", "tpot", "itl", "e2el"}) {
    os << "<figure>" << LatencyChart(a, metric) << "</figure>";
  }
  os << "</div><p class=\"note\">Bars: p50, p90 and p99 per result (label@concurrency); a "
        "dashed line is an SLO on that metric; whiskers, where the summaries carry them, are "
        "prediction intervals.</p>";
  Section(os, tables, "latency");
  os << "\n<h2 id=\"cost\">Cost</h2>";
  Section(os, tables, "cost");
  if (FindTable(tables, "energy") != nullptr) {
    os << "\n<h2 id=\"energy\">Energy</h2><figure>" << EnergyChart(a)
       << "<figcaption>Facility joules per output token (PUE included) and the GPU boards' "
          "share.</figcaption></figure>";
    Section(os, tables, "energy");
  }
  os << "\n<h2 id=\"binding\">What binds</h2>";
  Section(os, tables, "binding");
  if (FindTable(tables, "pd_vs_colocated") != nullptr) {
    os << "\n<h2 id=\"pd_vs_colocated\">PD vs co-located twin</h2>";
    Section(os, tables, "pd_vs_colocated");
  }
  if (FindTable(tables, "cache_and_speculation") != nullptr) {
    os << "\n<h2 id=\"cache_and_speculation\">Prefix caching and speculative decoding</h2>";
    Section(os, tables, "cache_and_speculation");
  }
  if (FindTable(tables, kCalibrationRunsTable) != nullptr) {
    os << "\n<h2 id=\"calibration\">Calibrated on your runs</h2>";
    Section(os, tables, kCalibrationRunsTable);
    Section(os, tables, kCalibrationTermsTable);
  }
  if (FindTable(tables, "warnings") != nullptr) {
    os << "\n<h2 id=\"warnings\">Warnings</h2>";
    Section(os, tables, "warnings");
  }
  os << "\n<footer>Generated by <code>capplan report</code> from:";
  for (const auto& r : a.results) os << " <code>" << HtmlEscape(SourceText(r)) << "</code>";
  os << "</footer>\n<pre id=\"capplan-selfcheck\"></pre><script>" << kSelfCheck
     << "</script>\n</body></html>\n";
  return os.str();
}

}  // namespace capplan::report
