// Report formats, registered by name (common/registry.h): html, md, csv,
// brief (report/brief.h).
// Each renders the same tables (report/tables.h); HTML adds inline SVG charts.
#ifndef CAPPLAN_REPORT_FORMATS_H_
#define CAPPLAN_REPORT_FORMATS_H_

#include <functional>
#include <string>
#include <vector>

#include "common/registry.h"
#include "report/analysis.h"
#include "report/tables.h"

namespace capplan::report {

using Renderer = std::function<std::string(const Analysis&, const std::vector<Table>&)>;

// The registry of formats; unknown names get "did you mean".
const Registry<Renderer>& ReportFormats();

// One self-contained HTML page: inline CSS and SVG, no network, a print
// stylesheet, and a tiny inline script that records layout self-checks into
// <pre id="capplan-selfcheck"> (see tests/report/browser_test.cc).
std::string RenderHtml(const Analysis& a, const std::vector<Table>& tables);
// GitHub-flavoured Markdown tables.
std::string RenderMarkdown(const Analysis& a, const std::vector<Table>& tables);
// Tidy CSV: table,row,column,value (one line per cell), so one file holds
// every table and pandas' pivot restores each.
std::string RenderCsv(const Analysis& a, const std::vector<Table>& tables);

}  // namespace capplan::report

#endif  // CAPPLAN_REPORT_FORMATS_H_
