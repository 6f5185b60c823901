// Runs a PD scenario: the prefill pool, then the KV transfer, then the
// decode pool, and joins them end to end.
//
// The pools are simulated one after the other with the simulator core
// (sim/simulate.h RunScenario, hooks specs_override / requests_out): the
// prefill pool sees the workload's arrivals and ends each request when its
// prompt is computed; the request then reaches the decode pool after the
// exposed transfer time. The decode pool admits it when its scheduler can
// reserve pages for the prompt (plus SGLang's new-token reservation); until
// then it waits in the decode pool's queue, and nothing is dropped.
// Its first token is the first decode step after admission, so
//   TTFT = prefill queue + prefill + transfer + decode queue + first decode step.
//
// Not modelled (reported in the summary's pd.model_limits): the prefill
// pool holding a finished prompt's KV until the decode pool accepts it
// (here it frees at prefill end, so a full decode pool never back-pressures
// prefill), and decode pages being reserved before rather than after the
// transfer.
#ifndef CAPPLAN_SIM_PD_PD_RUN_H_
#define CAPPLAN_SIM_PD_PD_RUN_H_

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "sim/pd/kv_transfer.h"
#include "sim/pd/pd_scenario.h"

namespace capplan {

struct PdRequest {
  int64_t id = 0;
  int64_t arrival_ns = 0;
  int64_t input = 0, output = 0, generated = 0;
  int64_t prefill_done_ns = -1;   // prompt computed in the prefill pool
  int64_t transfer_ns = 0;        // exposed transfer time
  int64_t decode_arrival_ns = -1;
  int64_t first_token_ns = -1;
  int64_t finish_ns = -1;
  bool done = false;
  bool warmup = false;
};

struct PdRunResult {
  nlohmann::json summary;
  std::vector<PdRequest> requests;  // workload order
  KvTransferPlan transfer;
};

Result<PdRunResult> RunPd(const PdScenario& pd);

}  // namespace capplan

#endif  // CAPPLAN_SIM_PD_PD_RUN_H_
