// The plain-text formats: Markdown for reviews and READMEs, tidy CSV for
// spreadsheets and notebooks. Both carry exactly the HTML report's tables.
#include <sstream>

#include "report/brief.h"
#include "report/formats.h"
#include "report/text_util.h"

namespace capplan::report {

std::string RenderMarkdown(const Analysis& a, const std::vector<Table>& tables) {
  std::ostringstream os;
  os << "# " << MarkdownCell(a.options.title) << "\n\n";
  os << "## Summary\n\n";
  for (const auto& line : SummaryLines(a)) os << "- **" << MarkdownCell(line) << "**\n";
  os << "\n";
  for (const auto& n : ReportNotes(a)) os << "- " << MarkdownCell(n) << "\n";
  os << "\nCharts (memory, throughput vs concurrency, Pareto front, latency percentiles) are "
        "in the HTML format (`--format html`).\n";
  for (const auto& t : tables) {
    os << "\n## " << MarkdownCell(t.title) << "\n\n";
    if (!t.note.empty()) os << MarkdownCell(t.note) << "\n\n";
    os << "|";
    for (const auto& c : t.columns) os << " " << MarkdownCell(c) << " |";
    os << "\n|";
    for (size_t i = 0; i < t.columns.size(); ++i) os << " --- |";
    os << "\n";
    for (const auto& row : t.rows) {
      os << "|";
      for (const auto& cell : row) os << " " << MarkdownCell(cell) << " |";
      os << "\n";
    }
  }
  os << "\nSources:";
  for (const auto& r : a.results) os << " `" << (IsAbsolutePath(r.origin) ? r.id : r.origin) << "`";
  os << "\n";
  return os.str();
}

std::string RenderCsv(const Analysis& /*a*/, const std::vector<Table>& tables) {
  std::ostringstream os;
  os << "table,row,column,value\n";
  for (const auto& t : tables) {
    for (size_t r = 0; r < t.rows.size(); ++r) {
      for (size_t c = 0; c < t.columns.size() && c < t.rows[r].size(); ++c) {
        os << CsvField(t.id) << "," << r + 1 << "," << CsvField(t.columns[c]) << ","
           << CsvField(t.rows[r][c]) << "\n";
      }
    }
  }
  return os.str();
}

}  // namespace capplan::report
