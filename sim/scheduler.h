// Scheduler plug-ins, registered by name. A scheduler forms one attention
// rank's batch for the next iteration: which waiting requests to admit, which
// prompt chunks to compute, whether the running requests decode, and which
// requests to retract (free their KV, requeue them at the front) when the KV
// pool runs out. It allocates the KV pages the batch needs before returning,
// so a batch can never over-commit the pool.
//
//  "sglang" (default): modeled on SGLang's scheduler. Prefill first: a new
//    prefill batch (FCFS, no skipping, at most chunked_prefill_tokens prompt
//    tokens, continuing a chunked request first) runs as its own iteration;
//    decode iterations run when no prefill can be formed. Admission reserves
//    KV for the prompt plus new_token_ratio * min(remaining output,
//    clip_max_new_tokens) for the new request and for every running one; the
//    ratio starts at init_new_token_ratio, decays by new_token_ratio_decay
//    per decode iteration to min_new_token_ratio, and is reset to the initial
//    value after a retraction. When a decode iteration needs more pages than
//    are free, the request that entered decoding last is retracted (repeat
//    until it fits); it re-prefills its prompt plus the tokens it already
//    produced.
//  "vllm": modeled on vLLM V1. One token budget (chunked_prefill_tokens as
//    max_num_batched_tokens) per iteration, decodes first, then unfinished
//    prompt chunks, then new requests FCFS; prefill and decode mix in one
//    iteration. No reservation: pages are allocated as needed and, when a
//    decode cannot get one, the latest request is preempted by recompute.
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
// KV check: its pages are held; only max_running_requests applies.
#ifndef CAPPLAN_SIM_SCHEDULER_H_
#define CAPPLAN_SIM_SCHEDULER_H_

#include <algorithm>
#include <functional>
#include <memory>

#include "common/registry.h"
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

  // Steady decode, the simulator's fast-forward (sim/serving_pool.h): true
  // when FormBatch, called on this rank while nothing outside it changes
  // except that its running requests grow by one token per iteration and
  // take free pages, forms a decode batch of exactly `running` (or nothing,
  // when nothing runs) and admits, prefills and reserves nothing: no prompt
  // is in progress, no PD queue waits, and the waiting queue is empty or
  // held back by max_running_requests (which frees only on a completion).
  // Never with speculative decoding (a step's tokens are drawn).
  virtual bool SteadyDecode(const RankState& rank) const;
  // The state FormBatch changes besides pages and contexts, advanced by `n`
  // steady decode iterations (the sglang new_token_ratio decay).
  virtual void SkipDecodeIterations(RankState& /*rank*/, int64_t /*n*/) const {}

 protected:
  // Frees the request's pages and puts it at the front of the waiting queue.
  void Retract(RankState& rank, SchedulerEnv& env, int32_t idx);
  // Gives up on a request that can never fit this rank.
  void Fail(RankState& rank, SchedulerEnv& env, int32_t idx);
  // Allocates the pages the running requests need to decode one token,
  // retracting the latest-entered running requests while they do not fit.
  // Fills out->decode*; false when nothing is left to decode.
  bool PrepareDecode(RankState& rank, SchedulerEnv& env, RankBatch* out);
  // Moves r from waiting to prefilling (or straight to running in
  // decode_only, with its prompt KV resident). A prompt that starts with
  // cached blocks (`hit`, from LookupPrefix) locks them and computes only the
  // rest; returns the cached pages that stopped being evictable.
  int64_t Admit(RankState& rank, SchedulerEnv& env, int32_t idx,
                const prefix_cache::Match& hit = prefix_cache::Match());
  // KV tokens promised to requests already admitted or reserved (the sglang
  // admission rule): the rest of their prompt plus new_token_ratio *
  // min(remaining output, clip_max_new_tokens).
  double Promised(const RankState& rank, const RequestTable& reqs) const;
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
};

using SchedulerFactory = std::function<std::unique_ptr<Scheduler>(const SchedulerConfig&)>;
Registry<SchedulerFactory>& Schedulers();

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_SCHEDULER_H_
