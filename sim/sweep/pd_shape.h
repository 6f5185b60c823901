// What a search reports about a prefill/decode-disaggregated configuration,
// read from its run summary's prefill and decode pools: the prefill:decode replica
// ratio, the GPUs of each pool, and which pool binds.
#ifndef CAPPLAN_SIM_SWEEP_PD_SHAPE_H_
#define CAPPLAN_SIM_SWEEP_PD_SHAPE_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "schema/run_summary.h"

namespace capplan::sim::sweep {

struct PdPoolShape {
  int replicas = 0;
  int gpus = 0;            // all replicas of the pool
  double utilization = 0;  // busy / (replicas x duration), summary pools.<pool>.utilization
  double mean_time_in_pool_ms = 0;  // queue + service in the pool
  // Mean wait before the pool serves a request: prefill queue; decode queue
  // plus the wait for a decode page reservation. Absent when the summary
  // does not split it out.
  std::optional<double> mean_queue_ms;
};

struct PdShape {
  PdPoolShape prefill, decode;
  // "2P:3D": prefill replicas : decode replicas.
  std::string ratio;
  // The pool whose replicas would raise the rate the SLOs allow ("prefill" |
  // "decode"), and why:
  //   * a TPOT or ITL SLO binds: decode (token gaps are set in the decode
  //     pool alone);
  //   * else (TTFT, E2E, or no SLO binds) the pool where requests wait
  //     longer (mean_queue_ms), when the summary splits the queues out;
  //   * else the pool with the higher utilization (ties: decode).
  std::string binding_pool;
  std::string binding_text;  // "decode (TPOT SLO binds; utilization 92% vs prefill 41%)"
};

// Absent for a co-located summary (no prefill and decode pools).
// `binding` is the search's binding constraint (FeasibleConfig::binding:
// {"kind": "slo", "slos": [{"metric": ...}, ...]}, most violated first), or
// null.
std::optional<PdShape> PdShapeOf(const schema::RunSummary& summary,
                                 const nlohmann::json& binding = nullptr);
nlohmann::json PdShapeJson(const PdShape& s);

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_PD_SHAPE_H_
