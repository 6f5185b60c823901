// A prefill/decode-disaggregated run next to its co-located twin: the same
// workload on a co-located deployment, so the planner sees what splitting
// the pools buys.
//
// Pairing rule: a PD result (summary `disaggregated: true`) named S pairs
// with the co-located result named "S-colocated" (the summaries' `scenario`,
// i.e. the scenario files' `name`); when several share that name, the one
// whose echoed `workload` equals the PD result's wins, else the first in
// input order. A PD result without a twin gets rows without deltas.
#ifndef CAPPLAN_REPORT_PD_COMPARE_H_
#define CAPPLAN_REPORT_PD_COMPARE_H_

#include <optional>
#include <string>
#include <vector>

#include "report/analysis.h"
#include "report/tables.h"

namespace capplan::report {

inline constexpr char kTwinSuffix[] = "-colocated";

struct PdPair {
  int pd = -1;    // index into Analysis::points
  int twin = -1;  // -1: no twin among the results
};

// One pair per PD result, in input order.
std::vector<PdPair> PdPairs(const Analysis& a);

// Table "pd_vs_colocated": per pair a PD row, a twin row and a "PD vs twin"
// row of relative changes (PD / twin - 1; GPUs as a difference). Absent when
// no result is PD.
std::optional<Table> PdComparisonTable(const Analysis& a);

}  // namespace capplan::report

#endif  // CAPPLAN_REPORT_PD_COMPARE_H_
