// The "sglang" scheduler: SGLang's prefill-first loop, its new-token-ratio
// admission estimate and its decode retraction (what it models and from
// which source files: sim/scheduler.h).
#include <algorithm>
#include <vector>

#include "sim/rank_cache.h"
#include "sim/request_table.h"
#include "sim/scheduler.h"

namespace capplan::sim {
namespace {

class SglangScheduler : public Scheduler {
 public:
  using Scheduler::Scheduler;
  // Opts into fast-forward: steady decode is the shared settled test.
  bool SteadyDecode(const RankState& rank) const override { return SettledDecode(rank); }
  void FormBatch(RankState& rank, SchedulerEnv& env, RankBatch* out) override {
    if (!rank.waiting.empty()) AdmitWaiting(rank, env);
    if (cfg_.phase != Phase::kDecodeOnly && !rank.prefilling.empty()) {
      AddPrefillChunks(rank, env, out);
      if (!out->prefill.empty()) return;
    }
    if (cfg_.phase != Phase::kPrefillOnly && !rank.running.empty()) Decode(rank, env, out);
    // SGLang's event loop resets the ratio whenever it finds nothing to run
    // (and, on a PD decode node, nothing is being preallocated or received).
    if (out->empty() && rank.prealloc.empty() && rank.retracted.empty() &&
        rank.incoming_out_tokens == 0) {
      rank.new_token_ratio = cfg_.init_new_token_ratio;
    }
  }

  void SkipDecodeIterations(RankState& rank, int64_t n) const override {
    // One subtraction per iteration, as FormBatch does, so the ratio is the
    // same double either way.
    for (int64_t i = 0; i < n && rank.new_token_ratio > cfg_.min_new_token_ratio; ++i) {
      DecayRatio(rank);
    }
  }

 private:
  std::vector<double> taken_;  // AdmitWaiting's scratch

  void DecayRatio(RankState& rank) const {
    rank.new_token_ratio =
        std::max(cfg_.min_new_token_ratio, rank.new_token_ratio - cfg_.new_token_ratio_decay);
  }

  // PrefillAdder: FCFS, the head is never overtaken; each admission must fit
  // beside what the admitted requests are promised.
  void AdmitWaiting(RankState& rank, SchedulerEnv& env) {
    RequestTable& reqs = *env.reqs;
    const int64_t page = rank.pool.page_size();
    // What admissions may take: free pages less what is promised, first
    // from PromisedAtMost; only an admission that bound refuses needs the
    // exact value, replayed with the same steps (taken).
    const double pages = static_cast<double>(AvailablePages(rank) * page);
    const PromiseSet before{rank.running.size(), rank.prefilling.size(),
                            rank.incoming_out_tokens};
    double avail = pages - PromisedAtMost(rank, reqs);
    bool exact = false;
    taken_.clear();
    int64_t budget = cfg_.chunked_prefill_tokens;
    if (cfg_.phase != Phase::kDecodeOnly) {
      for (int32_t i : rank.prefilling) budget -= reqs[i].prompt_target - reqs[i].prefilled;
    }
    while (!rank.waiting.empty() &&
           reqs[rank.waiting.front()].arrival_ns < env.visible_before_ns &&
           static_cast<int64_t>(rank.running.size() + rank.prefilling.size()) <
               cfg_.max_running_requests &&
           (budget > 0 || cfg_.phase == Phase::kDecodeOnly)) {
      if (FailHeadIfTooLarge(rank, env)) continue;
      const int32_t idx = rank.waiting.front();
      ReqState& r = reqs[idx];
      const int64_t out_left = cfg_.phase == Phase::kPrefillOnly ? 0 : ClippedOutLeft(r);
      prefix_cache::Match hit;
      const int64_t cached = LookupPrefix(rank, env, idx, &hit);
      // Page rounding of the prompt counts against the pool too. A PD
      // reservation (pages held) was checked when it was made.
      const double need =
          r.pages > 0 ? 0.0
                      : static_cast<double>(rank.pool.PagesFor(r.prompt_target - cached) * page) +
                            rank.new_token_ratio * out_left;
      // A host hit takes GPU pages to load into (Admit allocates them, and
      // counts them in what it returns).
      const double load = static_cast<double>(HostLoadPages(rank, hit) * page);
      if (need + load > avail && !exact) {
        exact = true;
        avail = pages - Promised(rank, reqs, before);
        for (double t : taken_) avail -= t;
      }
      if (need + load > avail) {
        rank.kv_bound = true;  // admission waited on KV, not on a request cap
        break;
      }
      rank.waiting.pop_front();
      // Cached pages this request now locks are no longer available.
      taken_.push_back(need + static_cast<double>(Admit(rank, env, idx, hit) * page));
      avail -= taken_.back();
      if (cfg_.phase != Phase::kDecodeOnly) budget -= r.prompt_target - r.prefilled;
    }
  }

  // A prefill iteration: chunked requests continue first, in order.
  void AddPrefillChunks(RankState& rank, SchedulerEnv& env, RankBatch* out) {
    int64_t budget = cfg_.chunked_prefill_tokens;
    for (int32_t i : rank.prefilling) {
      if (budget <= 0) break;
      if (!AddChunk(rank, env, i, budget, out)) break;
      budget -= out->prefill.back().tokens;
    }
  }

  // update_running_batch: decay the ratio, or retract when the step's pages
  // are not free.
  void Decode(RankState& rank, SchedulerEnv& env, RankBatch* out) {
    int64_t ctx = 0;
    int64_t needed = DecodePagesNeeded(rank, env, &ctx);
    if (needed > AvailablePages(rank)) {
      needed = RetractDecode(rank, env, needed);
      ctx = -1;  // requests left: summed again
    } else {
      DecayRatio(rank);
    }
    CommitDecode(rank, env, needed, out, ctx);
  }

  // Whether the requests left running may stop retracting.
  bool Enough(const RankState& rank, int64_t needed) const {
    const int64_t avail = AvailablePages(rank);
    if (needed > avail) return false;
    if (cfg_.retract_until == RetractUntil::kNextDecodeFits) return true;
    return avail * rank.pool.page_size() >=
           static_cast<int64_t>(rank.running.size()) * cfg_.retract_decode_steps;
  }

  // The running request retract_decode frees next: the fewest output tokens,
  // then the longest prompt, then the latest in the batch. With speculative
  // decoding the latest (its batch filter can only drop from the back).
  size_t Victim(const std::vector<int32_t>& run, const RequestTable& reqs) const {
    if (!cfg_.speculative.p.empty()) return run.size() - 1;
    size_t v = 0;
    for (size_t j = 1; j < run.size(); ++j) {
      const ReqState& a = reqs[run[j]];
      const ReqState& b = reqs[run[v]];
      if (a.generated < b.generated || (a.generated == b.generated && a.input >= b.input)) v = j;
    }
    return v;
  }

  // retract_decode: returns the pages the requests left need to step.
  int64_t RetractDecode(RankState& rank, SchedulerEnv& env, int64_t needed) {
    RequestTable& reqs = *env.reqs;
    std::vector<int32_t>& run = rank.running;
    for (bool first = true; first || !Enough(rank, needed); first = false) {
      if (run.size() == 1) break;  // the last request is never retracted
      const size_t v = Victim(run, reqs);
      const int32_t victim = run[v];
      run.erase(run.begin() + static_cast<std::ptrdiff_t>(v));
      needed -= GrowPages(rank, reqs[victim]);
      Retract(rank, env, victim, Requeue::kBack);
    }
    if (needed > AvailablePages(rank)) {
      // Even the last request cannot step: SGLang aborts it. A chunked
      // prompt holding pages will finish and free them, so then it waits.
      const int32_t last = run.back();
      run.pop_back();
      needed = 0;
      if (rank.prefilling.empty()) {
        Fail(rank, env, last);
      } else {
        Retract(rank, env, last, Requeue::kBack);
      }
    }
    int64_t decoded = 0, max_new = 0;
    for (int32_t i : run) {
      decoded += reqs[i].generated;
      max_new += reqs[i].output;
    }
    if (max_new > 0) {
      const double steps = static_cast<double>(cfg_.retract_decode_steps * std::ssize(run));
      rank.new_token_ratio = std::min(1.0, (static_cast<double>(decoded) + steps) / max_new);
    }
    return needed;
  }
};

}  // namespace

std::unique_ptr<Scheduler> MakeSglangScheduler(const SchedulerConfig& c) {
  return std::make_unique<SglangScheduler>(c);
}

}  // namespace capplan::sim
