// The report's tables, built once from an Analysis so that HTML, Markdown and
// CSV carry the same rows with the same formatted numbers.
#ifndef CAPPLAN_REPORT_TABLES_H_
#define CAPPLAN_REPORT_TABLES_H_

#include <string>
#include <vector>

#include "report/analysis.h"

namespace capplan::report {

struct Table {
  std::string id;     // stable snake_case name (CSV "table" column, HTML id)
  std::string title;  // heading
  std::string note;   // what is counted, units, caveats
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};

// Table ids, in report order: deployments, memory, throughput, latency,
// cost, energy when any result has energy figures (sim/energy.h), binding, pd_vs_colocated when any result is PD (report/pd_compare.h),
// cache_and_speculation when any result caches prefixes or speculates, and
// warnings when any result carries warnings.
std::vector<Table> BuildTables(const Analysis& a);

// "1000 / median TPOT (ms)" etc.: the sentences every format prints so the
// reader knows which tokens a figure counts.
std::vector<std::string> ReportNotes(const Analysis& a);

// A result's offered concurrency as table text ("n/a" when unknown).
std::string ConcurrencyText(const Summary& s);

}  // namespace capplan::report

#endif  // CAPPLAN_REPORT_TABLES_H_
