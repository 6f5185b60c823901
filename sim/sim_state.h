// State shared by the simulator loop and the scheduler plug-ins: requests,
// attention ranks, and what one rank runs in one iteration.
#ifndef CAPPLAN_SIM_SIM_STATE_H_
#define CAPPLAN_SIM_SIM_STATE_H_

#include <climits>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "sim/kv_pool.h"
#include "sim/prefix_cache/prefix_cache.h"
#include "sim/speculative/acceptance.h"

namespace capplan::sim {

enum class Phase { kBoth, kDecodeOnly, kPrefillOnly };
// As a scenario spells it (deployment.phase): "both", "decode_only",
// "prefill_only".
inline const char* PhaseName(Phase p) {
  switch (p) {
    case Phase::kDecodeOnly:
      return "decode_only";
    case Phase::kPrefillOnly:
      return "prefill_only";
    case Phase::kBoth:
      break;
  }
  return "both";
}
inline constexpr Phase kPhases[] = {Phase::kBoth, Phase::kDecodeOnly, Phase::kPrefillOnly};

// A request's lifecycle in one pool, whatever the pool's role
// (schema::PoolRole). A pool that serves both phases runs kPending ->
// kWaiting -> kPrefilling -> kDecoding -> kDone. Where a pool has a
// neighbour, two states mark the hand-over: a prefill-role pool ends a
// request in kHandedOff (prompt computed, its pages kept until the next
// pool has the KV), and a decode-role pool holds a request in kAwaitingKv
// (its pages reserved, the KV on the way) between kWaiting and kDecoding.
// kWaiting covers every queue a rank keeps (waiting, prealloc, retracted).
enum class ReqStatus : uint8_t {
  kPending,
  kWaiting,
  kAwaitingKv,
  kPrefilling,
  kDecoding,
  kHandedOff,
  kDone,
  kFailed
};

struct ReqState {
  int64_t id = 0;
  int32_t idx = -1;  // index into the run's requests (sim/request_source.h)
  int64_t arrival_ns = 0;
  int64_t input = 0;
  int64_t output = 0;
  int64_t prompt_target = 0;  // tokens to (re)prefill: input + generated at admission
  int64_t prefilled = 0;      // of prompt_target, in the cache
  int64_t generated = 0;      // output tokens emitted
  int64_t kv_tokens = 0;      // tokens in the cache
  int64_t pages = 0;          // KV pages held
  int64_t admit_seq = 0;      // admission order (retraction picks the latest)
  int64_t admit_ns = -1;  // first admission by the scheduler (queue time ends)
  int64_t first_token_ns = -1;
  int64_t last_token_ns = -1;
  int64_t finish_ns = -1;
  // The time its steps waited for KV loaded back from a lower tier.
  int64_t kv_load_ns = 0;
  int32_t instance = -1;
  int32_t rank = -1;
  int32_t retractions = 0;
  // Prefix cache: the deepest cached node this request locked and the prompt
  // tokens it found there (their pages are the cache's, not the request's).
  int32_t cache_node = prefix_cache::kRoot;
  int64_t cached_tokens = 0;
  ReqStatus status = ReqStatus::kPending;
  bool warmup = false;
  // Its admission loads KV back from a lower tier; cleared by the step
  // that waits for it.
  bool loading_kv = false;
  // Tokens the decode step being formed emits (1, or 1 + accepted drafts
  // with speculative decoding); set with the step's pages.
  int32_t step_tokens = 1;
};

// No cap on admitted requests (tests that exercise the KV pool alone).
inline constexpr int64_t kNoRequestCap = int64_t{1} << 30;

// When SGLang's retract_decode stops retracting (after at least one):
// kDecodeStepsHeadroom, once retract_decode_steps tokens per remaining
// request are free; kNextDecodeFits, once the next decode step fits.
enum class RetractUntil : uint8_t { kUnset, kDecodeStepsHeadroom, kNextDecodeFits };

// Scheduler knobs, per attention rank.
struct SchedulerConfig {
  Phase phase = Phase::kBoth;
  int64_t max_running_requests = kNoRequestCap;
  // SGLang chunk / vLLM token budget; set by the caller (PrepareRun: the
  // scenario or its engine profile). The pool refuses a value below 1.
  int64_t chunked_prefill_tokens = 0;
  // SGLang's admission estimate and decode retraction (sim/scheduler.h):
  // engine-profile data (models/engines/sglang.json), copied here by
  // ApplyEngineScheduling; 0 / kUnset are filled from SGLang's latest
  // profile by FillSglangDefaults where the deployment is resolved (a pool
  // refuses a config left unfilled).
  double init_new_token_ratio = 0;
  double min_new_token_ratio = 0;
  double new_token_ratio_decay = 0;  // per decode iteration
  int64_t clip_max_new_tokens = 0;
  int64_t retract_decode_steps = 0;
  RetractUntil retract_until = RetractUntil::kUnset;
  // PD decode pool: a retracted request keeps its KV in host memory and
  // waits in RankState::retracted (no prefill pool to recompute it here).
  bool retract_to_host = false;
  // Speculative decoding (empty acceptance: off): a decode step verifies
  // draft_tokens() + 1 positions per request and emits a count drawn by
  // speculative::DrawStepTokens with `seed`; pages are taken for the tokens
  // it emits.
  speculative::AcceptanceModel speculative;
  uint64_t seed = 0;
  // The engine forms the next batch while the current one runs (SGLang's
  // overlap event loop, vLLM's asynchronous scheduling): the batch that
  // follows a step was formed when that step began, so a request that
  // arrives during a step, or as it ends (a closed loop's next request), is
  // first admitted by the schedule after the next (ServingPool::OnSchedule).
  bool overlap_schedule = false;
  // vLLM's admission gate (scheduler_reserve_full_isl, on by default from
  // vLLM 0.19): a waiting request is admitted only when the pages for all of
  // its tokens to compute (its prompt, plus the output of a preempted one)
  // are available, not only those of its first chunk. Engine-profile data
  // per vLLM version; the "vllm" scheduler reads it (sim/scheduler.h).
  bool admit_whole_prompt = false;
};

struct PrefillChunk {
  int32_t req = 0;
  int64_t tokens = 0;
  int64_t cached = 0;  // tokens already in the cache before this chunk
};

// One rank's batch for one iteration. Pages for it are already allocated.
struct RankBatch {
  std::vector<PrefillChunk> prefill;
  bool decode = false;  // every request in `running` decodes one token
  int64_t decode_n = 0;
  int64_t decode_ctx_sum = 0;
  bool empty() const { return prefill.empty() && !decode; }
  // Back to an empty batch, keeping the chunk list's storage so that a step
  // with a prompt chunk allocates nothing.
  void Clear() {
    std::vector<PrefillChunk> chunks = std::move(prefill);
    chunks.clear();
    *this = RankBatch();
    prefill = std::move(chunks);
  }
};

struct RankState {
  KvPool pool;
  std::deque<int32_t> waiting;   // FCFS; retracted requests re-enter at the front
  std::deque<int32_t> prealloc;  // PD decode rank: waiting for a page reservation, FIFO
  // PD decode rank: retracted requests whose KV went to host memory (SGLang's
  // DecodePreallocQueue.retracted_queue); they re-reserve before any new
  // prealloc and rejoin `waiting` with their KV restored, never re-prefilled.
  std::deque<int32_t> retracted;
  std::vector<int32_t> running;  // decoding, in admission order
  std::vector<int32_t> prefilling;  // admitted, prompt not complete, admission order
  int64_t kv_tokens = 0;            // tokens in the cache on this rank
  int64_t queued_tokens = 0;        // prompt tokens waiting (for the router)
  // PD decode rank: min(output, clip_max_new_tokens) summed over requests
  // with reserved pages not yet admitted; their new-token reservation.
  int64_t incoming_out_tokens = 0;
  double new_token_ratio = 0;  // SGLang's; starts at SchedulerConfig::init_new_token_ratio
  int64_t retractions = 0;
  bool kv_bound = false;
  // The rank's prefix cache (owned by its pool); null when caching is off.
  prefix_cache::PrefixCache* cache = nullptr;
  int64_t prompt_tokens_admitted = 0;  // with a cache: prompt tokens of admissions
  int64_t cache_hit_tokens = 0;        // of those, found in the cache
  // Host tier (the cache's EnableHostTier): of cache_hit_tokens, those
  // loaded back from host memory; a host hit shorter than
  // host_load_min_tokens is computed instead (SGLang's load_back_threshold).
  int64_t host_hit_tokens = 0;
  int64_t host_load_min_tokens = 0;
  // Blocks loaded for the batch being formed: its step waits for their
  // transfer (ServingPool prices it and clears this).
  int64_t loading_blocks = 0;
};

// Content-block ids of request idx's token stream, the first n blocks
// (sim/workload's ContentBlocks, bound to the run's workload).
using ContentFn = std::function<void(int32_t idx, int64_t n_blocks, std::vector<int64_t>* out)>;

class RequestTable;  // sim/request_table.h
struct BatchDigest;  // sim/batch_digest.h

// What a scheduler may do to the world besides forming the batch.
struct SchedulerEnv {
  RequestTable* reqs = nullptr;
  int64_t now_ns = 0;
  int64_t* admit_counter = nullptr;
  std::vector<int32_t>* failed = nullptr;  // requests the scheduler gave up on
  const ContentFn* content = nullptr;      // set when prefix caching is on
  bool content_self_only = false;          // SimConfig::prefix_self_only
  std::vector<int64_t>* blocks = nullptr;  // scratch for content ids
  // The requests at the front of the batch a rank's last pass left, when
  // the pool has them (DecodePagesNeeded reads only the rest).
  const BatchDigest* digest = nullptr;
  // Waiting requests that arrived at or after this time are not seen by
  // this schedule (SchedulerConfig::overlap_schedule); INT64_MAX: all are.
  int64_t visible_before_ns = INT64_MAX;
};

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_SIM_STATE_H_
