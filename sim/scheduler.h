// Scheduler plug-ins, registered by name. A scheduler forms one attention
// rank's batch for the next iteration: which waiting requests to admit, which
// prompt chunks to compute, whether the running requests decode, and which
// requests to retract or preempt (free their KV, requeue them) when the KV
// pool runs out. It allocates the KV pages the batch needs before returning,
// so a batch can never over-commit the pool. Under an engine that overlaps
// scheduling with the GPU (SchedulerConfig::overlap_schedule: SGLang's
// event_loop_overlap, vLLM's asynchronous scheduling), the batch formed at a
// step end was formed when that step began in the engine: both schedulers
// admit only waiting requests that arrived before then
// (SchedulerEnv::visible_before_ns, set by the pool).
//
//  "sglang" (default), SGLang's Scheduler and ScheduleBatch at the versions
//    models/engines/sglang.json lists (python/sglang/srt/managers/
//    scheduler.py, schedule_batch.py and schedule_policy.py of
//    https://github.com/sgl-project/sglang, tags v0.4.0 to v0.5.4).
//    Prefill first: a new prefill batch (FCFS, no skipping, at most
//    chunked_prefill_tokens prompt tokens, continuing a chunked request
//    first) runs as its own iteration; decode iterations run when no prefill
//    can be formed. Admission reserves KV for the prompt plus new_token_ratio
//    * min(remaining output, clip_max_new_tokens) for the new request and for
//    every running one. The ratio starts at its initial value, decays by
//    (init - min) / decay_steps per decode iteration that needs no
//    retraction, and is reset to the initial value when the rank has nothing
//    to run (SGLang's idle self-check). When a decode iteration needs more
//    pages than are free, ScheduleBatch.retract_decode frees requests: the
//    one with the fewest output tokens first (ties: the longest prompt, then
//    the latest in the batch; with speculative decoding simply the latest),
//    at least one, then more until the profile's
//    `retract_until` holds (0.4.x: retract_decode_steps free tokens per
//    remaining request; 0.5.4: the next decode step fits), never the last
//    one (which is failed if it still cannot step). Retracted requests go to
//    the back of the waiting queue and re-prefill their prompt plus the
//    tokens they produced; the ratio becomes min(1, (tokens decoded +
//    retract_decode_steps x requests) / their max new tokens) over the
//    requests left running.
//  "vllm", vLLM V1's Scheduler.schedule (vllm/v1/core/sched/scheduler.py,
//    https://github.com/vllm-project/vllm/blob/main/vllm/v1/core/sched/scheduler.py;
//    the same algorithm in vllm/v1/core/scheduler.py of the 0.8 releases)
//    with KVCacheManager.allocate_slots (vllm/v1/core/kv_cache_manager.py:
//    a request gets blocks for its computed plus new tokens when that many
//    are free, evictable cached blocks counted as free; nothing is reserved
//    for future output). One token budget (chunked_prefill_tokens as
//    max_num_batched_tokens) per iteration. Running requests, in admission
//    order (decodes and the chunked prompt still in progress), are scheduled
//    first; when one cannot get the blocks for its new tokens, the newest
//    running request is preempted (blocks freed, recomputed later, put at the
//    front of the waiting queue), repeatedly, until the allocation succeeds
//    or the request preempted itself. Only when nothing was preempted are
//    waiting requests admitted, FCFS, while the token budget, max_num_seqs
//    (max_running_requests) and free blocks for their first chunk allow;
//    with SchedulerConfig::admit_whole_prompt (vLLM's
//    scheduler_reserve_full_isl, on by default from 0.19: allocate_slots'
//    full_sequence_must_fit), free blocks for every token the request will
//    compute (its prompt, plus its output when it was preempted). Without
//    that gate a long prompt admitted on its first chunk is preempted by
//    the running requests' growth part-way through its prefill, again and
//    again. With prefix caching the hit's evictable blocks count as taken
//    (get_num_blocks_to_allocate), and the lookup touches the hit only once
//    the request is admitted (allocate_slots' block_pool.touch). Prefill
//    and decode mix in one iteration. tests/sim/
//    vllm_golden_test.cc holds the batches, preemptions and first tokens
//    step by step to traces of vLLM's own Scheduler (0.10.2 and 0.33.0,
//    tests/data/golden/vllm; scripts/golden/README.md says where they
//    differ).
//
// Phases: decode_only admits requests with their prompt KV already resident
// (pages are allocated, no prefill is computed; the first token comes from
// the first decode iteration); prefill_only ends every request after the
// prefill that produces its first token.
//
// PD reservation (sim/serving_pool.h, both schedulers): a decode rank
// reserves a request's prompt pages before the prefill pool computes it, when
// free pages minus what admitted requests are promised (the sglang rule
// above) cover the page-rounded prompt plus new_token_ratio * min(output,
// clip_max_new_tokens). SGLang's own DecodePreallocQueue reserves prompt +
// a fixed SGLANG_NUM_RESERVED_DECODE_TOKENS (its source marks "TODO: add
// new_token ratio"); using the scheduler's ratio keeps one admission rule per
// rank and one set of knobs. A reserved request is admitted later without a
// KV check: its pages are held; only max_running_requests applies. On a PD
// decode rank a retracted request keeps its KV in host memory (the retracted
// queue): sglang picks it by the rule above, vllm takes its newest running
// request.
//
// Not modelled: vLLM's priority policy, long_prefill_token_threshold and
// partial-prefill limits (off by default), a token budget smaller than the
// decode batch (every running request decodes; max_num_seqs stays below
// max_num_batched_tokens), asynchronous scheduling's output placeholders;
// SGLang keeping a retracted request's radix-cached prefix (its prompt
// enters the cache here only when it finishes) and, with DP attention, the
// reset of the ratio on one idle rank while others run (SGLang runs an idle
// batch then).
//
// SGLang's ratios and retraction knobs are engine-profile data
// (models/engines/sglang.json, per version); SchedulerConfig holds them for
// one run and FillSglangDefaults supplies SGLang's latest profile where a
// config leaves them 0 (the PD reservation rule needs them under vllm too),
// once, where the deployment is resolved.
#ifndef CAPPLAN_SIM_SCHEDULER_H_
#define CAPPLAN_SIM_SCHEDULER_H_

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "common/registry.h"
#include "common/status.h"
#include "models/engine_profile.h"
#include "sim/sim_state.h"

namespace capplan::sim {

enum class ReserveOutcome { kReserved, kNoRoom, kFailed };

class Scheduler {
 public:
  explicit Scheduler(const SchedulerConfig& c) : cfg_(c) {}
  virtual ~Scheduler() = default;
  virtual void FormBatch(RankState& rank, SchedulerEnv& env, RankBatch* out) = 0;
  // PD decode rank: reserves the prompt's pages for request idx (see the
  // header comment); kFailed when it can never fit (then failed like
  // Fail()), kNoRoom when it must wait.
  ReserveOutcome Reserve(RankState& rank, SchedulerEnv& env, int32_t idx);
  // Gives a reservation back (the prefill pool failed the request).
  void CancelReservation(RankState& rank, ReqState& r);

  // The rank's scheduler state when the pool starts (the sglang ratio at
  // its initial value; the PD reservation rule reads it under any scheduler).
  virtual void InitRank(RankState& rank) const { rank.new_token_ratio = cfg_.init_new_token_ratio; }
  // PD decode rank: serves the rank's queues of requests waiting for pages.
  // Retracted requests resume first, as SGLang's resume_retracted_reqs runs
  // before new preallocations (their KV comes back from host memory, so
  // they skip the prefill pool and join the waiting queue); then the
  // prealloc queue reserves FIFO, nobody overtaking its head. Appends the
  // newly reserved requests to `reserved` and returns whether any resumed.
  virtual bool ReserveQueued(RankState& rank, SchedulerEnv& env, std::vector<int32_t>* reserved);

  // Steady decode, the simulator's fast-forward (sim/serving_pool.h), is
  // opt-in: the default, false, has the pool form every iteration's batch.
  // A scheduler that overrides it returns true only when FormBatch, called
  // on this rank while nothing outside it changes except that its running
  // requests grow by one token per iteration and take free pages, forms a
  // decode batch of exactly `running` (or nothing, when nothing runs) and
  // admits, prefills and reserves nothing. A retraction or preemption needs
  // pages that are not free, which fast-forward never skips over.
  virtual bool SteadyDecode(const RankState& /*rank*/) const { return false; }
  // The state FormBatch changes besides pages and contexts, advanced by `n`
  // steady decode iterations (the sglang new_token_ratio decay).
  virtual void SkipDecodeIterations(RankState& /*rank*/, int64_t /*n*/) const {}

 protected:
  enum class Requeue { kFront, kBack };
  // The steady-decode test of a scheduler that admits only from its waiting
  // queue, under max_running_requests: no prompt is in progress, no PD
  // queue waits, and the waiting queue is empty or held back by the cap
  // (which frees only on a completion). Never with speculative decoding (a
  // step's tokens are drawn) or in a prefill-only pool.
  bool SettledDecode(const RankState& rank) const;
  // Frees the request's pages and puts it back in the waiting queue (a PD
  // decode rank: in its retracted queue, KV kept in host memory). With
  // `keep_cached` its full blocks stay in the prefix cache (vLLM frees a
  // preempted request's blocks into its cache; SGLang frees them outright).
  void Retract(RankState& rank, SchedulerEnv& env, int32_t idx, Requeue where,
               bool keep_cached = false);
  // Gives up on a request that can never fit this rank.
  void Fail(RankState& rank, SchedulerEnv& env, int32_t idx);
  // Draws the step's tokens (speculative decoding) and returns the pages the
  // running requests need to decode one step; *ctx_sum, when given, is their
  // contexts with this step's token, summed (RankBatch::decode_ctx_sum).
  int64_t DecodePagesNeeded(RankState& rank, SchedulerEnv& env, int64_t* ctx_sum = nullptr);
  // Pages request r needs before it can append this step's tokens.
  int64_t GrowPages(const RankState& rank, const ReqState& r) const;
  // Allocates the pages the running requests need (already known to be
  // available) and fills out->decode*; false when nothing runs. `ctx_sum`:
  // DecodePagesNeeded's when `running` has not changed since, else -1
  // (then summed here); with it, only the requests that DecodePagesNeeded
  // found at a page boundary are read again.
  bool CommitDecode(RankState& rank, SchedulerEnv& env, int64_t needed, RankBatch* out,
                    int64_t ctx_sum = -1);
  // PD decode rank: decode, retracting the latest-admitted running request
  // while the step's pages are not free.
  bool PrepareDecodeRetractLatest(RankState& rank, SchedulerEnv& env, RankBatch* out);
  // Moves r from waiting to prefilling (or straight to running in
  // decode_only, with its prompt KV resident). A prompt that starts with
  // cached blocks (`hit`, from LookupPrefix) locks them and computes only the
  // rest; returns the cached pages that stopped being evictable.
  int64_t Admit(RankState& rank, SchedulerEnv& env, int32_t idx,
                const prefix_cache::Match& hit = prefix_cache::Match());
  // Decode-only rank: admits resident prompts FCFS while their pages (and
  // one to grow) are free.
  void AdmitResident(RankState& rank, SchedulerEnv& env);
  // KV tokens promised to requests already admitted or reserved (the sglang
  // admission rule): the rest of their prompt plus new_token_ratio *
  // min(remaining output, clip_max_new_tokens).
  double Promised(const RankState& rank, const RequestTable& reqs) const;
  // Promised() as it was before admissions appended to the rank's queues:
  // over the first `running` and `prefilling` requests, with the
  // incoming_out_tokens of then.
  struct PromiseSet {
    size_t running = 0, prefilling = 0;
    int64_t incoming_out_tokens = 0;
  };
  double Promised(const RankState& rank, const RequestTable& reqs, const PromiseSet& set) const;
  // Never below Promised() (each running request is promised at most
  // clip_max_new_tokens), without reading the running requests. Rounding
  // is monotone, so an admission `avail` computed from it allows, the
  // exact value allows too.
  double PromisedAtMost(const RankState& rank, const RequestTable& reqs) const;
  int64_t ClippedOutLeft(const ReqState& r) const {
    return std::min(r.output - r.generated, cfg_.clip_max_new_tokens);
  }
  // True when the request can never fit the rank's pool.
  bool TooLarge(const RankState& rank, const ReqState& r) const;
  // Fails the head of the waiting queue when it can never fit the rank's
  // pool; true when it did (the caller looks at the new head).
  bool FailHeadIfTooLarge(RankState& rank, SchedulerEnv& env);
  // Adds a prompt chunk of up to `budget` tokens for r; false (nothing
  // added) when the pages for it are not free.
  bool AddChunk(RankState& rank, SchedulerEnv& env, int32_t idx, int64_t budget, RankBatch* out);

  SchedulerConfig cfg_;

 private:
  // DecodePagesNeeded's: the requests that take pages this step, in batch
  // order.
  std::vector<int32_t> growing_;
};

using SchedulerFactory = std::function<std::unique_ptr<Scheduler>(const SchedulerConfig&)>;
Registry<SchedulerFactory>& Schedulers();

std::unique_ptr<Scheduler> MakeSglangScheduler(const SchedulerConfig& c);
std::unique_ptr<Scheduler> MakeVllmScheduler(const SchedulerConfig& c);

// Copies an engine profile's scheduling keys into *c: vLLM's whole-prompt
// admission, SGLang's ratio and retraction keys (no change to those when the
// profile has none; models::EngineDefaults).
void ApplyEngineScheduling(const models::EngineDefaults& d, SchedulerConfig* c);
// Fills the ratio and retraction knobs a config leaves 0 from SGLang's
// latest engine profile; an error when that profile cannot be read. Called
// once where a deployment is resolved (PrepareRun; Simulate() for a bare
// config); ServingPool::Create refuses a config it has not filled.
Status FillSglangDefaults(SchedulerConfig* c);
// Whether every knob FillSglangDefaults fills is set.
bool SchedulingFilled(const SchedulerConfig& c);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_SCHEDULER_H_
