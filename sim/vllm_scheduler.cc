// The "vllm" scheduler: vLLM V1's Scheduler.schedule (what it models and
// from which source files: sim/scheduler.h).
//
// vLLM keeps one running list in admission order, decodes and chunked
// prompts alike. Here decoding requests sit in RankState::running and
// prompts in progress in RankState::prefilling, each in admission order;
// `running` followed by `prefilling` is vLLM's order, because a prompt still
// in progress is always the newest request: a chunk that leaves part of its
// prompt for later uses up the token budget, so nothing is admitted after it
// until it completes.
#include <algorithm>

#include "sim/rank_cache.h"
#include "sim/request_table.h"
#include "sim/scheduler.h"

namespace capplan::sim {
namespace {

class VllmScheduler : public Scheduler {
 public:
  using Scheduler::Scheduler;
  // Opts into fast-forward: steady decode is the shared settled test.
  bool SteadyDecode(const RankState& rank) const override { return SettledDecode(rank); }
  void FormBatch(RankState& rank, SchedulerEnv& env, RankBatch* out) override {
    if (cfg_.phase == Phase::kDecodeOnly) {
      AdmitResident(rank, env);
      if (!rank.running.empty()) PrepareDecodeRetractLatest(rank, env, out);
      return;
    }
    int64_t budget = cfg_.chunked_prefill_tokens;
    const bool preempted = ScheduleRunning(rank, env, &budget, out);
    // vLLM admits nothing in a step that preempted. When that step is empty
    // (the oldest request preempted itself), the engine's next schedule()
    // call, at the same instant, admits: done here at once.
    if (!preempted || out->empty()) AdmitWaiting(rank, env, budget, out);
  }

 private:
  // Preempts the newest running request (freed, recomputed later, at the
  // front of the waiting queue) until `pages` are available for the request
  // at position `pos` of running ++ prefilling; false when that request
  // preempted itself.
  bool MakeRoom(RankState& rank, SchedulerEnv& env, int64_t pages, size_t pos, bool* preempted) {
    while (pages > AvailablePages(rank)) {
      const size_t live = rank.running.size() + rank.prefilling.size();
      int32_t victim;
      if (!rank.prefilling.empty()) {
        victim = rank.prefilling.back();
        rank.prefilling.pop_back();
      } else {
        victim = rank.running.back();
        rank.running.pop_back();
      }
      Retract(rank, env, victim, Requeue::kFront, /*keep_cached=*/true);
      *preempted = true;
      if (live - 1 == pos) return false;
    }
    return true;
  }

  // The RUNNING pass: each request in order gets the blocks for its new
  // tokens (one decode step, or the next prompt chunk within the budget).
  // Decodes are not cut by the budget: max_num_seqs stays below it.
  bool ScheduleRunning(RankState& rank, SchedulerEnv& env, int64_t* budget, RankBatch* out) {
    RequestTable& reqs = *env.reqs;
    bool preempted = false;
    // Draws the step's speculative tokens; the pages are counted below.
    if (!rank.running.empty() && !cfg_.speculative.p.empty()) DecodePagesNeeded(rank, env);
    int64_t ctx = 0;
    size_t n = 0;
    // When every decode's new pages are available, no request preempts:
    // the batch's tight pass counts and takes them, in the same order.
    if (!rank.running.empty() && cfg_.speculative.p.empty()) {
      const int64_t needed = DecodePagesNeeded(rank, env, &ctx);
      if (needed <= AvailablePages(rank)) {
        CommitDecode(rank, env, needed, out, ctx);
        *budget -= out->decode_n;
        n = rank.running.size();
      } else {
        ctx = 0;
      }
    }
    for (; n < rank.running.size(); ++n) {
      ReqState& r = reqs[rank.running[n]];
      const int64_t pages = GrowPages(rank, r);
      if (!MakeRoom(rank, env, pages, n, &preempted)) break;
      if (pages > 0) {
        AllocatePages(rank, pages);  // MakeRoom made them available
        r.pages += pages;
      }
      ctx += r.kv_tokens + 1;
      // Each request's verified draft positions count in the token budget.
      *budget -= 1 + cfg_.speculative.draft_tokens();
    }
    if (n > 0 && !out->decode) {
      out->decode = true;
      out->decode_n = static_cast<int64_t>(n);
      out->decode_ctx_sum = ctx;
    }
    for (size_t k = 0; k < rank.prefilling.size() && *budget > 0; ++k) {
      const int32_t idx = rank.prefilling[k];
      const ReqState& r = reqs[idx];
      const int64_t chunk = std::min(r.prompt_target - r.prefilled, *budget);
      const int64_t pages = rank.pool.PagesFor(r.kv_tokens - r.cached_tokens + chunk) - r.pages;
      if (!MakeRoom(rank, env, pages, rank.running.size() + k, &preempted)) break;
      AddChunk(rank, env, idx, *budget, out);  // MakeRoom made its pages available
      *budget -= chunk;
    }
    return preempted;
  }

  // Pages of the prefix-cache hit that are evictable now: admission locks
  // them, so they stop counting as available (vLLM's
  // get_num_blocks_to_allocate counts a hit block with ref_cnt 0 as one to
  // allocate).
  static int64_t HitEvictablePages(RankState& rank, const prefix_cache::Match& hit) {
    if (hit.blocks == 0 || rank.cache == nullptr) return 0;
    const int64_t before = rank.cache->evictable_pages();
    rank.cache->Lock(hit.node);
    const int64_t locked = before - rank.cache->evictable_pages();
    rank.cache->Unlock(hit.node);
    return locked;
  }

  // The WAITING pass: FCFS while the budget, max_num_seqs and free blocks
  // for the request's first chunk (after its prefix-cache hit) allow; with
  // admit_whole_prompt, free blocks for all of its tokens to compute.
  void AdmitWaiting(RankState& rank, SchedulerEnv& env, int64_t budget, RankBatch* out) {
    RequestTable& reqs = *env.reqs;
    while (budget > 0 && !rank.waiting.empty() &&
           reqs[rank.waiting.front()].arrival_ns < env.visible_before_ns &&
           static_cast<int64_t>(rank.running.size() + rank.prefilling.size()) <
               cfg_.max_running_requests) {
      if (FailHeadIfTooLarge(rank, env)) continue;
      const int32_t idx = rank.waiting.front();
      ReqState& r = reqs[idx];
      prefix_cache::Match hit;
      // vLLM's get_computed_blocks only looks; allocate_slots touches the
      // hit blocks once the request fits.
      const int64_t cached = LookupPrefix(rank, env, idx, &hit, /*touch=*/false);
      const int64_t chunk = std::min(r.prompt_target - cached, budget);
      const int64_t gate = cfg_.admit_whole_prompt ? r.prompt_target - cached : chunk;
      if (rank.pool.PagesFor(gate) + HitEvictablePages(rank, hit) > AvailablePages(rank)) {
        rank.kv_bound = true;
        break;
      }
      if (hit.blocks > 0) rank.cache->Touch(hit.node);
      rank.waiting.pop_front();
      Admit(rank, env, idx, hit);
      AddChunk(rank, env, idx, budget, out);  // pages checked above
      budget -= out->prefill.back().tokens;
    }
  }
};

}  // namespace

std::unique_ptr<Scheduler> MakeVllmScheduler(const SchedulerConfig& c) {
  return std::make_unique<VllmScheduler>(c);
}

}  // namespace capplan::sim
