// Prefill and decode pools linked by a KV transfer (Scenario::transfer): the
// link the run driver (sim/run_driver.h) runs both pools with, on SGLang's
// disaggregation protocol (sim/pd/README.md "Protocol"):
//   arrival -> decode rank's prealloc queue (FIFO) -> pages reserved for the
//   prompt -> prefill pool's waiting queue -> chunked prefill -> KV held by
//   the prefill pool while the exposed transfer runs -> prefill pages freed,
//   request joins the decode pool's waiting queue with its reserved pages ->
//   first decode step = first token.
// A full decode pool holds requests in its prealloc queue (never drops
// them), and a prefill pool full of held KV admits less (back-pressure).
//   TTFT = wait for decode reservation + prefill queue + prefill
//          + exposed transfer + decode queue + first decode step.
// Conservation is checked at the end of every run: every page back in both
// pools, requests in = completed + failed, in each pool and end to end.
//
// The link drives sim's pools, so it sits in sim/; the run driver finds it
// by name ("pd", sim/pool_link.h PoolLinks(), where its factory MakeKvLink
// is declared) and never names it. sim/pd holds what it prices with (the
// transfer plan, sim/pd/kv_transfer.h) and depends on nothing in sim.
#ifndef CAPPLAN_SIM_PD_LINK_H_
#define CAPPLAN_SIM_PD_LINK_H_

#include <cstdint>
#include <vector>

#include "sim/pd/kv_transfer.h"

namespace capplan::sim {
class PoolLink;  // sim/pool_link.h
}  // namespace capplan::sim

namespace capplan::sim::pd {

// One request's way through both pools.
struct PdRequest {
  int64_t id = 0;
  int64_t arrival_ns = 0;
  int64_t input = 0, output = 0, generated = 0;
  int64_t reserve_ns = -1;        // decode pages reserved; sent to the prefill pool
  int64_t prefill_admit_ns = -1;  // the prefill scheduler admitted it
  int64_t prefill_done_ns = -1;   // prompt computed in the prefill pool
  int64_t transfer_ns = 0;        // exposed transfer time
  int64_t decode_arrival_ns = -1;  // KV arrived: prefill pages freed, decode waiting queue
  int64_t decode_admit_ns = -1;
  int64_t first_token_ns = -1;
  int64_t finish_ns = -1;
  bool done = false;
  bool warmup = false;
  bool prefilled = false;  // completed in the prefill pool (its KV sent)
};

// What the link `link` (made by MakeKvLink, the "pd" entry of PoolLinks())
// kept: each request's time in each stage, in workload order, and the
// transfer it planned (tests and tools read them from RunPools' PoolsRun).
const std::vector<PdRequest>& KvLinkRequests(const PoolLink& link);
const KvTransferPlan& KvLinkPlan(const PoolLink& link);

}  // namespace capplan::sim::pd

#endif  // CAPPLAN_SIM_PD_LINK_H_
