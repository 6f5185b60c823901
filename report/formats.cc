#include "report/formats.h"

#include "report/brief.h"

namespace capplan::report {

const Registry<Renderer>& ReportFormats() {
  static const Registry<Renderer>* registry = [] {
    auto* r = new Registry<Renderer>("report format");
    r->Add("html", RenderHtml, "self-contained page with inline SVG charts");
    r->Add("md", RenderMarkdown, "Markdown tables");
    r->Add("csv", RenderCsv, "tidy CSV: table,row,column,value");
    r->Add(
        "brief", [](const Analysis& a, const std::vector<Table>&) { return RenderBrief(a); },
        "the report's opening lines alone: what changed and what binds (text)");
    r->Add(
        "energy", [](const Analysis& a, const std::vector<Table>&) { return RenderEnergyBrief(a); },
        "one line: joules per output token and output tokens/s per provisioned MW per "
        "configuration (text)");
    return r;
  }();
  return *registry;
}

}  // namespace capplan::report
