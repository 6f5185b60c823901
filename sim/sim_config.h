// One pool's run as the discrete-event core sees it: what it is given
// (SimConfig: replicas, ranks, KV pages, scheduler and router names, prefix
// cache, what to record) and what it returns (SimResult: every request's
// final state unless a sink took them, the pool's counters and peaks). The
// pool (sim/serving_pool.h) reads and fills them; each prepared pool of a
// scenario (sim/prepared_run.h) writes its config, and its summary reads the
// result.
//
// Conservation is checked at the end of every run: requests in = completed +
// failed + in flight, and every KV page is back in its pool; a violation is
// an Internal error (a simulator bug), never a silent result.
#ifndef CAPPLAN_SIM_SIM_CONFIG_H_
#define CAPPLAN_SIM_SIM_CONFIG_H_

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/cost_model.h"
#include "sim/metrics.h"
#include "sim/request_source.h"
#include "sim/request_table.h"
#include "sim/sim_state.h"
#include "sim/step_pricer.h"

namespace capplan::sim {

struct SimConfig {
  std::string scheduler = "sglang";
  SchedulerConfig sched;
  std::string router = "round_robin";  // | "least_kv"
  int replicas = 1;
  int ranks_per_replica = 1;  // DP-attention ranks, each with its own pool
  int64_t kv_tokens_per_rank = 0;
  int64_t page_size = 0;  // set by the caller; the pool refuses a value below 1
  // Requests in flight at most (closed loop: all arrive at 0 and this many
  // are kept in flight; open loop: the benchmarks' --max-concurrency
  // semaphore). A request's send time (TTFT/E2EL origin) is when it gets a
  // slot. 0 = no cap.
  int64_t concurrency = 0;
  // Content identity of the requests (empty when the workload has none):
  // blocks of prefix_block_tokens tokens. With prefix_cache, every
  // prefill-capable rank keeps a cache of them (sim/rank_cache.h; the block
  // size must be a multiple of page_size); the cache_aware router follows
  // them either way.
  bool prefix_cache = false;
  int64_t prefix_block_tokens = 0;
  ContentFn content;
  // The content is distinct per request (a workload without content
  // identity, under an engine whose prefix cache is on): only a preempted
  // request's own blocks can ever hit. Completed requests' blocks are cached
  // unindexed (never looked up; held as free pages while nothing indexed is
  // older, PrefixCache::ReleaseStaleUnindexed), only a request that was
  // preempted looks the cache up, routers see no content, and the summary
  // reports no prefix cache.
  bool prefix_self_only = false;
  // A host-memory tier under each rank's prefix cache (SGLang HiCache's
  // host pool; off when blocks_per_rank is 0): evicted blocks keep a copy
  // there, and a hit on one is loaded back over the host link before the
  // step that admits its request can finish.
  struct HostTier {
    int64_t blocks_per_rank = 0;
    prefix_cache::HostWritePolicy policy = prefix_cache::HostWritePolicy::kWriteThrough;
    double bytes_per_block = 0;        // one rank's KV of one block
    double load_bytes_per_s = 0;       // host to GPU, per GPU
    bool layerwise_overlap = false;    // the forward starts before the load ends
    int64_t load_min_tokens = 0;       // a shorter host hit is computed instead
  } host_tier;
  bool want_trace = false;
  int64_t trace_max_iterations = 100000;
  // Steady decode iterations between two events that can change a batch are
  // advanced in closed form (sim/serving_pool.h); off = one event per
  // iteration. Both give the same results; a trace turns it off (it draws
  // every iteration).
  bool fast_forward = true;
  std::ostream* progress = nullptr;  // progress bar when the run takes > 1 s
  // Receives every request's final state as it leaves the pool; the pool
  // then keeps none of it (SimResult::requests stays empty), so a run's
  // memory follows the requests in flight. Null: SimResult::requests keeps
  // every request's final state.
  RequestSink* sink = nullptr;
};

struct SimResult {
  // Every request's final state, in spec order; empty when a sink took them.
  std::vector<ReqState> requests;
  LogHistogram itl_ns;             // non-warmup requests only
  int64_t iterations = 0;          // replica iterations
  int64_t fast_forward_iterations = 0;  // of those, skipped in closed form
  int64_t fast_forward_completions = 0;  // requests finished at skipped step ends
  int64_t retractions = 0;
  bool kv_bound = false;
  int64_t kv_capacity_tokens_per_replica = 0;
  int64_t peak_kv_tokens = 0;       // max over replicas and time
  int64_t kv_pages_per_rank = 0;
  int64_t peak_kv_pages_per_rank = 0;  // max over ranks and time, reserved and held pages included
  int64_t peak_transfer_pages = 0;     // PD: pages reserved before or held for a KV transfer, pool-wide
  int64_t max_running_requests = 0;  // peak admitted (prefilling + decoding), one replica
  // Most requests in flight at once (sent, not yet done or failed; a finish
  // and a send at the same instant: the finish first).
  int64_t max_concurrent_requests = 0;
  int64_t max_request_slots = 0;  // the pool's request table at its largest
  // Prefix caching, summed over ranks (zero when off): prompt tokens of
  // admissions and of those the tokens found cached; blocks evicted; the
  // most tokens one rank's cache held at once (max over ranks).
  int64_t prefix_prompt_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t prefix_evicted_blocks = 0;
  int64_t prefix_cached_tokens_peak = 0;
  // Host tier (zero when off): of prefix_hit_tokens, those loaded back from
  // host memory; blocks copied to, loaded from and evicted from it; its
  // fullest (max over ranks); the step time spent waiting for loads.
  int64_t host_hit_tokens = 0;
  int64_t host_written_blocks = 0;
  int64_t host_loaded_blocks = 0;
  int64_t host_evicted_blocks = 0;
  int64_t host_blocks_peak = 0;
  // Speculative decoding: request decode steps and the tokens they emitted
  // (their ratio is the mean accept length).
  int64_t spec_decode_steps = 0;
  int64_t spec_emitted_tokens = 0;
  StepCost busy;  // sum over iterations of the priced step (slowest rank)
  int64_t end_ns = 0;
  nlohmann::json trace_events = nlohmann::json::array();
  bool trace_truncated = false;
};

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_SIM_CONFIG_H_
