// The PD view of a run summary with a prefill and a decode pool: both pools
// and the KV transfer between them (Summary::pd), and the display deployment
// built from the two pools.
#ifndef CAPPLAN_REPORT_PD_SUMMARY_H_
#define CAPPLAN_REPORT_PD_SUMMARY_H_

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "report/summary.h"
#include "schema/run_summary.h"

namespace capplan::report {

// Fills s->pd, s->deployment (merged from the pools), the decode pool's KV
// capacity and peak, and the busier pool's step-time shares. Errors name the
// file and JSON path.
Status PdFields(const schema::RunSummary& run, Summary* s);

// The pools' deployments as one object: shared values kept, differing ones
// as "P:<prefill> D:<decode>", replicas as "<p>P:<d>D".
nlohmann::json MergePoolDeployments(const nlohmann::json& prefill, const nlohmann::json& decode);

}  // namespace capplan::report

#endif  // CAPPLAN_REPORT_PD_SUMMARY_H_
