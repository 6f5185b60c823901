// The run summary: what one simulation reports, as a typed value. The
// simulator fills it, sweeps and searches read it, `capplan report` reads it
// back from files; ToJson and FromJson are the one writer and the one reader
// of its JSON form (the keys scenarios/README.md and sim/simulate.h list:
// snake_case with units, vLLM's and SGLang's serving-benchmark metric names).
//
// Every field is optional: the simulator sets all it knows, files written by
// other versions or tools may carry fewer, and a reader shows what is there.
//
// One layout rule: a run with a single pool that does both phases
// (co-located serving) writes that pool's fields at the top level; a run with
// several pools (prefill/decode disaggregation) writes `disaggregated: true`,
// each pool under `pools.<name>` and each pool's cost as
// `cost_usd_<name>_pool`.
#ifndef CAPPLAN_SCHEMA_RUN_SUMMARY_H_
#define CAPPLAN_SCHEMA_RUN_SUMMARY_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace capplan::schema {

// One latency-like distribution in milliseconds, written as
// {mean,median,p90,p99}_<name>_ms.
struct Stats {
  std::optional<double> mean, median, p90, p95, p99;
  bool empty() const { return !mean && !median && !p90 && !p95 && !p99; }
};
// The statistics a Stats holds, in field order, as summary keys spell them
// ("mean", "median", "p90", "p95", "p99": `<stat>_<metric>_ms`).
const std::vector<std::string>& StatNames();

// A prediction interval around a metric, written as <key>_lo and <key>_hi.
struct Interval {
  double lo = 0, hi = 0;
};

struct Profile {
  std::string name, path;
  nlohmann::json provenance;  // {parameter: kind} as written; other forms kept as read
};

struct Memory {
  std::optional<int64_t> weights_bytes_per_gpu;
  std::optional<std::map<std::string, int64_t>> weights_by_component_bytes;
  std::optional<int64_t> reserve_bytes_per_gpu, kv_pool_bytes_per_gpu, gpu_memory_bytes;
  std::optional<double> mem_fraction_static;
  std::optional<bool> mem_fraction_defaulted;
  std::optional<int64_t> kv_tokens_per_rank;
  // The instance's KV pool with the memory terms that rest on one public
  // log or an assumption at their ends (models/README.md).
  std::optional<int64_t> kv_tokens_lo, kv_tokens_hi;
  std::optional<int64_t> draft_weights_bytes_per_gpu;  // speculative decoding's draft layers
  // Every term of the memory plan by its key (weights, engine reserves,
  // resident extras such as EPLB's redundant experts, the KV pool): they
  // add up to gpu_memory_bytes.
  std::optional<std::map<std::string, int64_t>> terms_bytes_per_gpu;
};

struct Goodput {
  std::map<std::string, double> slo;  // "ttft_ms" -> limit
  std::optional<int64_t> good_requests;
  std::optional<double> request_goodput, good_fraction;
};

struct SimulatorStats {
  std::optional<int64_t> step_cost_memo_hits, step_cost_memo_misses;
  // Of `iterations`, those advanced in closed form (sim/serving_pool.h).
  std::optional<int64_t> fast_forward_iterations;
  // Requests that finished at a step end fast-forward skipped.
  std::optional<int64_t> fast_forward_completions;
  std::optional<double> context_bucket_relative_error, itl_histogram_relative_error;
  std::optional<double> simulated_end_s;
};

enum class PoolRole { kBoth, kPrefill, kDecode };
// "both" | "prefill" | "decode".
const char* PoolRoleName(PoolRole r);

// One serving pool: its deployment, KV, memory and where its time went.
struct PoolSummary {
  std::string name;  // key under `pools` ("prefill", "decode"); unused for one co-located pool
  PoolRole role = PoolRole::kBoth;
  nlohmann::json deployment;  // the resolved deployment, echoed (null: absent)
  std::optional<int> gpus;    // all replicas
  // Requests this pool completed and failed (several pools only: a co-located
  // pool's are the run's).
  std::optional<int64_t> completed, failed;
  std::optional<double> cost_usd;  // several pools only
  std::optional<int64_t> kv_capacity_tokens, kv_bytes_per_token, peak_kv_tokens;
  std::optional<double> peak_kv_fraction;
  std::optional<int64_t> max_concurrent_requests, max_running_requests_observed, retractions;
  std::optional<bool> kv_bound;
  std::optional<Memory> memory;
  std::optional<std::map<std::string, double>> op_time_share, bound_time_share;
  std::optional<double> kv_verify_time_share;
  // Busy-time-weighted version drift of the ops priced by kernel tables
  // measured at another engine release (sim/prediction_intervals.h); absent
  // when no op was.
  std::optional<double> cross_version_drift;
  // Busy-time share of each provenance class that priced it (measured,
  // cross_version, assumed, extrapolated, collective, host:
  // sim/op_provenance.h), and the mean log-error spread of the measured and
  // cross-version ops; the prediction bands are built from them.
  std::optional<std::map<std::string, double>> provenance_time_share, provenance_spread;
  std::optional<int64_t> iterations;
  std::optional<double> busy_s;
  std::optional<SimulatorStats> simulator;
  std::optional<std::vector<std::string>> warnings;
  // Pages, not tokens: reserved and held pages carry no tokens yet (or any
  // more) but are taken all the same.
  std::optional<int64_t> kv_pages_per_rank, peak_kv_pages_per_rank, peak_transfer_pages;
  std::optional<double> peak_kv_page_fraction;
  std::optional<double> utilization;  // busy / (replicas x simulated span)
  // Prefix caching (set when the pool caches prompt prefixes): prompt tokens
  // found cached over prompt tokens admitted, the tokens that skipped
  // prefill, the most tokens one rank's cache held, cache blocks evicted.
  std::optional<double> prefix_cache_hit_rate;
  std::optional<int64_t> prefill_tokens_saved, cached_kv_tokens_peak, prefix_cache_evicted_blocks;
  // Host KV tier (set when the deployment has one; per GPU): prompt tokens
  // loaded back from host memory over prompt tokens admitted (inside
  // prefix_cache_hit_rate), GiB loaded and written over the host link, the
  // fullest host pool, copies evicted from it, and the busy time steps
  // spent waiting for loads.
  std::optional<double> host_cache_hit_rate, host_kv_loaded_gib, host_kv_written_gib,
      host_kv_peak_gib, kv_load_stall_s;
  std::optional<int64_t> host_kv_evicted_blocks;
  // Speculative decoding (set when on): tokens emitted per request decode
  // step; busy-time shares of the target's verify passes and of the draft
  // model's passes.
  std::optional<double> accept_length_mean, spec_verify_time_share, spec_draft_time_share;
  // Power (sim/energy.h; several pools only: one pool's are the run's):
  // nodes, average IT draw (all of it, and the GPU boards'), the draw with
  // every GPU in the hottest state the run reached, and what the nodes are
  // provisioned for (no PUE).
  std::optional<double> nodes;  // GPUs / GPUs per node (hw/power.h)
  std::optional<double> avg_kw, avg_gpu_kw, peak_kw, provisioned_kw;
  // Stage -> its time per request (time_in_pool, prefill_queue, ...).
  std::map<std::string, Stats> stages;
  // Field -> what it means, written as <field>_note.
  std::map<std::string, std::string> notes;
};

// The KV transfer between a prefill and a decode pool.
struct Transfer {
  std::optional<std::string> link;
  std::optional<bool> layerwise_overlap;
  std::optional<std::string> src_kv_dtype, dst_kv_dtype;
  std::optional<int64_t> src_bytes_per_token_per_rank, dst_bytes_per_token_per_rank;
  std::optional<int64_t> wire_bytes_per_token_per_rank;
  std::optional<double> bandwidth_bytes_per_s, latency_s;
  std::optional<std::string> latency_source;
  // A link derived from where the pools sit (link "auto"): why that link,
  // the GPUs that send and receive one request's KV, and the bytes per
  // prompt token on the busiest link (sim/pd/kv_fabric.h).
  std::optional<std::string> placement;
  std::optional<int64_t> senders_per_request, receivers_per_request;
  std::optional<int64_t> link_bytes_per_token;
  Stats exposed_transfer;
};

struct RunSummary {
  std::optional<std::string> scenario, model, hardware;
  std::optional<std::string> label;  // a display name a tool gave the result
  std::optional<Profile> profile;
  nlohmann::json workload;  // the workload, echoed (null: absent)
  // End to end, as the client sees it (warmup requests excluded).
  std::optional<int64_t> completed, failed, total_input_tokens, total_output_tokens;
  std::optional<double> duration_s, request_throughput, input_throughput, output_throughput;
  std::optional<double> total_token_throughput, output_throughput_per_gpu;
  std::optional<double> total_token_throughput_per_gpu;
  Stats ttft, tpot, itl, e2el;
  // TTFT's parts where one pool takes the requests: queue (to the first
  // admission) and prefill (from there to the first token), and within
  // prefill the wait for KV loaded back from a lower tier (with KV tiers).
  Stats queue_time, prefill_time, kv_load_time;
  std::optional<Goodput> goodput;
  std::optional<int> gpus;  // every pool's GPUs, all replicas
  std::optional<double> usd_per_gpu_hour, cost_usd;
  std::optional<double> cost_usd_per_million_output_tokens, cost_usd_per_million_total_tokens;
  // Energy (sim/energy.h), when the hardware profile has a power model:
  // facility joules per token (PUE included) and the boards' alone; IT kW
  // over the deployment and per node; provisioned kW (PUE included) and
  // tokens per second per provisioned MW; electricity per million tokens
  // with a price per kWh.
  std::optional<double> pue;
  std::optional<double> nodes;  // GPUs / GPUs per node, summed over pools
  std::optional<double> avg_kw, peak_kw, avg_kw_per_node, peak_kw_per_node, provisioned_kw;
  std::optional<double> joules_per_output_token, joules_per_total_token;
  std::optional<double> gpu_joules_per_output_token;
  std::optional<double> output_tokens_per_s_per_mw, total_tokens_per_s_per_mw;
  std::optional<double> usd_per_kwh, electricity_usd_per_million_output_tokens;
  std::optional<double> electricity_usd_per_million_total_tokens;
  // Offered concurrency as other benchmark tools write it (vLLM's result
  // files); capplan echoes it under `workload` instead.
  std::optional<double> max_concurrency, concurrency;
  // The measured window (sim/steady_state.h): requests in flight on average
  // (Little's law) and, for a closed loop, that over its concurrency.
  std::optional<double> mean_requests_in_flight, window_occupancy;
  std::vector<PoolSummary> pools;
  std::optional<Transfer> transfer;
  std::optional<std::vector<std::string>> model_limits;
  std::map<std::string, std::string> notes;   // field -> meaning, written as <field>_note
  std::map<std::string, Interval> intervals;  // metric key -> prediction interval

  // Several pools (or one that does not do both phases): written with
  // `disaggregated: true` and `pools`.
  bool disaggregated() const;
  // The pool with this role, or null.
  const PoolSummary* pool(PoolRole role) const;
};

nlohmann::json ToJson(const RunSummary& s);
// Reads what is there, checking types and ranges; errors name `origin` and
// the JSON path. Keys it does not know are ignored (fixtures and other tools
// add their own). For every summary the simulator writes,
// ToJson(FromJson(ToJson(s))) == ToJson(s).
Result<RunSummary> FromJson(const nlohmann::json& doc, const std::string& origin);

// A metric by its summary key: "{mean,median,p90,p99}_{ttft,tpot,itl,e2el}_ms",
// the throughputs, "cost_usd_per_million_{output,total}_tokens", "gpus"; with
// "_lo"/"_hi" the end of its prediction interval. Null when absent.
std::optional<double> Metric(const RunSummary& s, std::string_view key);
// The keys Metric knows (without the interval suffixes).
const std::vector<std::string>& MetricKeys();

// USD per million tokens for `gpus` GPUs at `usd_per_gpu_hour` that produced
// `tokens` in `seconds`: usd_per_gpu_hour * gpus * seconds / 3600 / tokens * 1e6.
// The one edge-case rule: no tokens (tokens <= 0) has no finite price per
// token, so the result is +infinity; its JSON form is null.
double CostPerMillionTokens(double usd_per_gpu_hour, double gpus, double seconds, double tokens);

}  // namespace capplan::schema

#endif  // CAPPLAN_SCHEMA_RUN_SUMMARY_H_
