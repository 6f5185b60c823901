// The simulator's public entry points. `capplan simulate`, sweeps, searches
// and reports all go through these.
//
// CONTRACT (pinned before implementation; extend, don't break):
//   * A scenario is a JSON document (scenarios/README.md documents every
//     field), parsed by sim/scenario.h ParseScenario; LoadScenarioFile
//     applies `--set dotted.path=value` overrides (common/json_util.h
//     SetDotted) before parsing. RunOptions and RunResult: sim/run_options.h.
//   * RunScenario is deterministic for a given scenario (seed included) and
//     thread-safe (sweeps run many on a thread pool).
//   * RunResult::summary is a schema::RunSummary (schema/run_summary.h);
//     its JSON keys (snake_case, with units) are at least:
//       scenario, model, hardware, profile {name, path, provenance},
//       deployment {engine, gpus, tp, ep, dp_attention, replicas, weights,
//                   kv_cache, page_size, kv_integrity, phase, ...},
//       completed, failed, duration_s, request_throughput, input_throughput,
//       output_throughput, total_token_throughput,
//       output_throughput_per_gpu, total_token_throughput_per_gpu,
//       {mean,median,p90,p99}_{ttft,tpot,itl,e2el}_ms,
//       goodput {slo: {...}, request_goodput} (when SLOs are given),
//       kv_capacity_tokens, kv_bytes_per_token, peak_kv_tokens,
//       max_concurrent_requests, retractions, kv_bound,
//       gpus, usd_per_gpu_hour, cost_usd_per_million_output_tokens,
//       cost_usd_per_million_total_tokens,
//       energy (sim/energy.h, profiles with a power block):
//       joules_per_{output,total}_token, gpu_joules_per_output_token, pue,
//       nodes, avg_kw, peak_kw, {avg,peak}_kw_per_node, provisioned_kw,
//       {output,total}_tokens_per_s_per_mw, usd_per_kwh,
//       electricity_usd_per_million_{output,total}_tokens,
//       memory {weights_bytes_per_gpu, weights_by_component_bytes {attention,
//               experts, ...}, reserve_bytes_per_gpu, kv_pool_bytes_per_gpu,
//               gpu_memory_bytes, mem_fraction_static},
//       op_time_share {attention, dense_gemm, moe, communication,
//                      elementwise, overhead}   (fractions summing to 1),
//       bound_time_share {compute, memory, communication, overhead},
//       iterations, warnings [strings]
#ifndef CAPPLAN_SIM_SIMULATE_H_
#define CAPPLAN_SIM_SIMULATE_H_

#include "common/status.h"
#include "sim/run_options.h"

namespace capplan::sim {

struct Scenario;  // sim/scenario.h

// The estimated run time checked, then the run driver on every pool of the
// scenario (sim/run_driver.h).
Result<RunResult> RunScenario(const Scenario& scenario, const RunOptions& options);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_SIMULATE_H_
