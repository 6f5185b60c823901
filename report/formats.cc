#include "report/formats.h"

#include "report/pd_compare.h"

namespace capplan::report {

const Registry<Renderer>& ReportFormats() {
  static const Registry<Renderer>* registry = [] {
    auto* r = new Registry<Renderer>("report format");
    r->Add("html", RenderHtml, "self-contained page with inline SVG charts");
    r->Add("md", RenderMarkdown, "Markdown tables");
    r->Add("csv", RenderCsv, "tidy CSV: table,row,column,value");
    return r;
  }();
  return *registry;
}

std::vector<std::string> Headlines(const Analysis& a) {
  std::vector<std::string> out;
  for (size_t c = 0; c < a.configs.size(); ++c) {
    if (a.configs[c].baseline == static_cast<int>(c)) continue;
    const std::string& base = a.configs[a.configs[c].baseline].label;
    const Point& p = a.points[a.configs[c].points.back()];
    std::string line = a.configs[c].label;
    if (p.summary->concurrency) line += " at concurrency " + ConcurrencyText(*p.summary);
    line += ": ";
    if (p.output_cost_change) {
      line += ChangePhrase(*p.output_cost_change, "cost per output token", base);
    } else {
      line += "no cost comparison (no GPU price; pass --usd-per-gpu-hour)";
    }
    line += "; binds: " + p.binding.binds;
    out.push_back(line);
  }
  for (auto& line : PdHeadlines(a)) out.push_back(std::move(line));
  return out;
}

}  // namespace capplan::report
