// Reading the extra keys of a prefill/decode-disaggregated summary (sim/pd's
// RunPd: `disaggregated`, `pools.prefill/decode`, `transfer`) into
// Summary::pd, and the display deployment built from the two pools.
#ifndef CAPPLAN_REPORT_PD_SUMMARY_H_
#define CAPPLAN_REPORT_PD_SUMMARY_H_

#include <nlohmann/json.hpp>

#include "common/json_util.h"
#include "common/status.h"
#include "report/summary.h"

namespace capplan::report {

// Fills s->pd, s->deployment (merged from the pools), the decode pool's KV
// capacity and peak, and the busier pool's step-time shares. Errors name the
// file and JSON path.
Status ParsePdFields(JsonObject& root, Summary* s);

// The pools' deployments as one object: shared values kept, differing ones
// as "P:<prefill> D:<decode>", replicas as "<p>P:<d>D".
nlohmann::json MergePoolDeployments(const nlohmann::json& prefill, const nlohmann::json& decode);

}  // namespace capplan::report

#endif  // CAPPLAN_REPORT_PD_SUMMARY_H_
