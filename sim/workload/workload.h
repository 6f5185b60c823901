// Simulator workloads: which requests arrive when, with how many input and
// output tokens. Four kinds, registered by name:
//   closed_loop  `concurrency` requests kept in flight (a new one is issued
//                when one completes); lengths from distributions.
//   open_loop    arrivals at `request_rate` req/s, Poisson or gamma
//                (`burstiness`), optional `max_concurrency` cap.
//   trace        replay of Azure 2023/2024, Mooncake or BurstGPT traces.
//   sessions     multi-turn conversations: each turn re-sends the history,
//                issued a think time after the previous turn completes.
// Every field is documented in sim/workload/README.md.
//
// CONTRACT (pinned for the simulator; extend, don't break): RequestSpec,
// Workload and LoadWorkload as below. Deterministic for a seed.
#ifndef CAPPLAN_SIM_WORKLOAD_WORKLOAD_H_
#define CAPPLAN_SIM_WORKLOAD_WORKLOAD_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/json_util.h"
#include "common/registry.h"
#include "common/status.h"

namespace capplan::sim {

// The most tokens one request's input or output may have: a thousand times
// the longest context of any model, and small enough that sums over 1e8
// requests stay exact in int64.
inline constexpr int64_t kMaxRequestTokens = 1'000'000'000;

// A closed loop that gives no num_requests runs a warm-up of one wave
// (concurrency requests) and this many measured waves after it. Requests of
// unequal lengths end a run on a ragged last wave worth about half a
// request's time, so a window of w waves keeps about 1 - 0.5 / w of the
// concurrency in flight (0.95 at the ten waves InferenceX sends, measured on
// the shipped GLM-5.2 and Kimi K2.6 decode scenarios); 40 keeps it above
// sim/steady_state.h's kSteadyOccupancy.
inline constexpr int64_t kClosedLoopDefaultWaves = 40;

struct RequestSpec {
  int64_t id;
  int64_t arrival_ns;
  int64_t input_tokens;   // >= 1
  int64_t output_tokens;  // >= 1
};

struct Workload {
  std::string kind;  // a WorkloadKindRegistry() name
  // closed_loop: requests kept in flight. open_loop and trace: the
  // max-concurrency cap (at most this many in flight; later arrivals wait,
  // like the benchmarks' --max-concurrency semaphore), 0 = no cap.
  int64_t concurrency = 0;
  std::vector<RequestSpec> requests;  // in issue order; closed loop: all arrival_ns = 0
  int64_t warmup_requests = 0;        // the first N requests are excluded from metrics
  uint64_t seed = 0;

  // Additions beyond the pinned contract.
  // Where the requests came from, e.g. "input=lognormal(median=1024,sigma=0.5)
  // output=fixed(128)" or "mooncake trace scenarios/traces/mooncake_sample.jsonl".
  std::string source;
  // Mooncake traces only: per request (parallel to `requests`), the hash ids
  // of its prefix blocks of `prefix_block_tokens` tokens; equal leading ids
  // mean a shared prefix (prefix-cache modelling). Empty for other kinds.
  std::vector<std::vector<int64_t>> prefix_block_ids;
  int64_t prefix_block_tokens = 0;
  // sessions kind only (parallel to `requests`; empty for other kinds):
  // request i is issued think_ns[i] after request after[i] completes, or at
  // its arrival_ns when after[i] is -1; session[i] is its conversation, whose
  // token stream (shared system prompt, then each turn's new tokens and
  // output) gives the content of its prompt.
  std::vector<int64_t> after;
  std::vector<int64_t> think_ns;
  std::vector<int64_t> session;
  int64_t shared_prefix_tokens = 0;  // leading tokens equal in every session
  // Trace rows dropped by filters (BurstGPT model/failure filter, time
  // window, num_requests cap).
  int64_t trace_rows_dropped = 0;
};

// Parses the scenario's whole "workload" object (strict: unknown keys are
// errors with did-you-mean; every error names file + JSON path) and generates
// the requests. Relative trace paths resolve against scenario_dir.
Result<Workload> LoadWorkload(JsonObject& workload_json, const std::string& scenario_dir);

// Content identity for prefix caching: the ids of the first `n_blocks`
// blocks (of prefix_block_tokens tokens) of request i's token stream (its
// prompt, then its output), fewer where the workload knows fewer (a Mooncake
// row's hash_ids cover its prompt only). Two requests with equal leading ids
// share those tokens. Empty for workloads without content identity.
void ContentBlocks(const Workload& w, int64_t i, int64_t n_blocks, std::vector<int64_t>* out);

// One line for summaries and logs, e.g. "closed_loop: 640 requests (64
// warmup), concurrency 64, input mean 16384 [16384..16384] tokens, output
// mean 1024 [1024..1024] tokens, span 0 s, seed 1; input=fixed(16384) ...".
std::string DescribeWorkload(const Workload& workload);

// A workload kind reads its own fields from the workload object (the common
// ones, kind/seed/warmup_requests, are read by LoadWorkload and already set
// in *out) and fills *out.
using WorkloadKindFactory = std::function<Status(JsonObject& workload_json,
                                                 const std::string& scenario_dir, Workload* out)>;
const Registry<WorkloadKindFactory>& WorkloadKindRegistry();

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_WORKLOAD_WORKLOAD_H_
