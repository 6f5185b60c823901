// Presenting a search: DIR/search.json, DIR/pruned.csv and the terminal
// report in the AIConfigurator style (boxed summary, top-N table, Pareto
// table, winner's binding constraint, arithmetic legend).
#ifndef CAPPLAN_SIM_SWEEP_SEARCH_REPORT_H_
#define CAPPLAN_SIM_SWEEP_SEARCH_REPORT_H_

#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "sim/sweep/search.h"

namespace capplan::sim::sweep {

nlohmann::json SearchJson(const SearchResult& r);
std::string PrunedCsv(const SearchResult& r);
// Writes DIR/search.json and DIR/pruned.csv atomically.
Status WriteSearchOutputs(const SearchResult& r, const std::string& dir);
void PrintSearchReport(const SearchResult& r, std::ostream& os);

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_SEARCH_REPORT_H_
