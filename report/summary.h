// One simulation result as the report sees it: what a planning report shows
// of a run summary (schema/run_summary.h, read with its one reader), with the
// display choices made (names, a PD run's merged deployment, concurrency).
// The report never links the simulator.
#ifndef CAPPLAN_REPORT_SUMMARY_H_
#define CAPPLAN_REPORT_SUMMARY_H_

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_util.h"
#include "common/status.h"
#include "schema/run_summary.h"

namespace capplan::report {

struct MemoryPerGpu {
  double weights_bytes = 0;
  // Component name -> bytes per GPU; empty when the simulator gave only the
  // total (then the chart shows one "weights" segment).
  std::map<std::string, double> weights_by_component;
  double reserve_bytes = 0;
  double kv_pool_bytes = 0;
  double gpu_memory_bytes = 0;
};

// One pool of a prefill/decode-disaggregated run (the summary's pools.<pool>).
struct PdPool {
  int replicas = 1;
  int gpus = 0;            // all replicas of the pool
  double utilization = 0;  // busy / (replicas x duration)
  std::string weights, kv_cache;
  std::optional<double> kv_capacity_tokens, peak_kv_tokens;
  std::optional<double> mean_time_in_pool_ms;
  std::map<std::string, double> bound_time_share;
};

// What a PD summary (`disaggregated: true`) adds: both pools and the KV
// transfer between them.
struct PdInfo {
  PdPool prefill, decode;
  std::string link;  // nvlink | rdma
  std::optional<double> mean_exposed_transfer_ms, p99_exposed_transfer_ms;
};

struct Summary {
  std::string origin;  // file it came from (errors and provenance)
  std::string id;      // the result's own name: "label", else scenario, else file stem
  std::string scenario;
  std::string model;
  std::string hardware;
  std::string profile_name;
  std::string profile_path;
  std::string profile_provenance;  // a string, or a compact dump of an object
  nlohmann::json deployment;       // raw object, shown and used for grouping
  int gpus = 0;

  // Offered concurrency (the x axis of throughput-vs-concurrency) and where
  // it was read from, so the report can say so.
  std::optional<double> concurrency;
  std::string concurrency_source;

  double completed = 0, failed = 0, duration_s = 0;
  double request_throughput = 0, input_throughput = 0, output_throughput = 0;
  double total_token_throughput = 0;
  double output_throughput_per_gpu = 0, total_token_throughput_per_gpu = 0;
  // "<stat>_<metric>" (stat in mean/median/p90/p99, metric in
  // ttft/tpot/itl/e2el) -> milliseconds; only the keys present.
  std::map<std::string, double> latency_ms;
  // Prediction intervals, where the simulator gives them ("<key>_ms_lo" and
  // "_hi" beside a latency key): same names as latency_ms -> (lo, hi) ms.
  std::map<std::string, std::pair<double, double>> latency_interval_ms;
  // The throughputs' prediction intervals (80% bands), by summary key
  // ("output_throughput", "input_throughput") -> (lo, hi) tok/s.
  std::map<std::string, std::pair<double, double>> throughput_interval;

  std::optional<double> usd_per_gpu_hour;
  // Energy (sim/energy.h), where the profile had a power model: facility
  // joules per output token, output tokens/s per provisioned MW, peak IT kW
  // per node, the PUE and the electricity per million output tokens.
  std::optional<double> joules_per_output_token, gpu_joules_per_output_token;
  std::optional<double> output_tokens_per_s_per_mw, peak_kw_per_node;
  std::optional<double> pue, electricity_usd_per_million_output_tokens;
  std::optional<double> kv_capacity_tokens, kv_bytes_per_token, peak_kv_tokens;
  std::optional<double> max_concurrent_requests, retractions;
  std::optional<double> prefix_cache_hit_rate;  // prompt tokens found cached / admitted
  std::optional<double> accept_length_mean;     // speculative decoding: tokens per request step
  bool kv_bound = false;

  std::optional<MemoryPerGpu> memory;
  // compute / memory / communication / overhead -> fraction of step time.
  std::map<std::string, double> bound_time_share;
  // SLO metric (ttft_ms, tpot_ms, ...) -> limit in ms, when goodput was asked.
  std::map<std::string, double> slo_ms;
  // The statistic each SLO bounds, by metric ("ttft" -> "p90"), where the
  // source says so (a search's SLOs do; a goodput SLO bounds every request).
  std::map<std::string, std::string> slo_stat;
  std::optional<double> request_goodput;
  std::optional<double> good_fraction;  // requests within every SLO / completed
  // Share of busy time spent verifying KV page integrity (kv_integrity verify).
  std::optional<double> kv_verify_time_share;
  std::vector<std::string> warnings;
  // Set for a prefill/decode-disaggregated run. Its `deployment` is then
  // built from the pools: a field both pools share keeps its value, one they
  // differ in reads "P:<prefill> D:<decode>", replicas read "1P:2D"; KV
  // capacity and peak are the decode pool's (where KV accumulates).
  std::optional<PdInfo> pd;
  // The workload the summary echoes (pairs a PD run with its co-located twin).
  nlohmann::json workload;

  // Deployment field as display text ("" when absent).
  std::string DeploymentField(const std::string& key) const;
};

// Parses a summary document; errors name `origin` and the JSON path. A
// document lacking the core keys is rejected as "not a simulation summary".
Result<Summary> ParseSummary(const nlohmann::json& doc, const std::string& origin);

// Loads every result named by `inputs`: a summary file, a `capplan simulate
// --out` directory (its summary.json), a `capplan search --out` directory
// (its winner's summary, labelled "<scenario> best at SLO (<config>, <rate>
// req/s)"), a `capplan sweep --out` directory (its valid points in manifest
// order, sweep_points.h), or a directory of summary files (every *.json in
// it, in name order). Order of the result follows inputs.
Result<std::vector<Summary>> LoadResults(const std::vector<std::string>& inputs);

}  // namespace capplan::report

#endif  // CAPPLAN_REPORT_SUMMARY_H_
