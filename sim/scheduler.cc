#include "sim/scheduler.h"

#include <algorithm>

#include "sim/rank_cache.h"
#include "sim/request_table.h"

namespace capplan::sim {

void Scheduler::Retract(RankState& rank, SchedulerEnv& env, int32_t idx) {
  ReqState& r = (*env.reqs)[idx];
  ReleaseRequestPages(rank, env, idx, /*insert=*/false);
  r.prefilled = 0;
  r.prompt_target = r.input + r.generated;
  ++r.retractions;
  if (cfg_.retract_to_host) {
    r.status = ReqStatus::kWaiting;
    rank.retracted.push_back(idx);
  } else {
    r.status = ReqStatus::kWaiting;
    rank.waiting.push_front(idx);
  }
  rank.queued_tokens += r.prompt_target;
  ++rank.retractions;
  rank.kv_bound = true;
  rank.new_token_ratio = cfg_.init_new_token_ratio;
}

void Scheduler::Fail(RankState& rank, SchedulerEnv& env, int32_t idx) {
  ReqState& r = (*env.reqs)[idx];
  ReleaseRequestPages(rank, env, idx, /*insert=*/false);
  r.status = ReqStatus::kFailed;
  r.finish_ns = env.now_ns;
  rank.kv_bound = true;
  env.failed->push_back(idx);
}

bool Scheduler::TooLarge(const RankState& rank, const ReqState& r) const {
  const int64_t out_left = cfg_.phase == Phase::kPrefillOnly ? 0 : r.output - r.generated;
  // Page-rounded prompt and output separately: the SGLang reservation rounds
  // the prompt up to pages, so this bound keeps a lone request admissible.
  return rank.pool.PagesFor(r.prompt_target) + rank.pool.PagesFor(out_left) >
         rank.pool.total_pages();
}

bool Scheduler::FailHeadIfTooLarge(RankState& rank, SchedulerEnv& env) {
  const int32_t idx = rank.waiting.front();
  const ReqState& r = (*env.reqs)[idx];
  if (!TooLarge(rank, r)) return false;
  rank.waiting.pop_front();
  rank.queued_tokens -= r.prompt_target;
  Fail(rank, env, idx);
  return true;
}

double Scheduler::Promised(const RankState& rank, const RequestTable& reqs) const {
  double promised = 0;
  for (int32_t i : rank.running) promised += rank.new_token_ratio * ClippedOutLeft(reqs[i]);
  for (int32_t i : rank.prefilling) {
    const ReqState& r = reqs[i];
    promised += (r.prompt_target - r.prefilled) + rank.new_token_ratio * ClippedOutLeft(r);
  }
  // Zero outside PD runs, so co-located admission is unchanged to the bit.
  if (rank.incoming_out_tokens > 0) promised += rank.new_token_ratio * rank.incoming_out_tokens;
  return promised;
}

ReserveOutcome Scheduler::Reserve(RankState& rank, SchedulerEnv& env, int32_t idx) {
  ReqState& r = (*env.reqs)[idx];
  if (TooLarge(rank, r)) {
    Fail(rank, env, idx);
    return ReserveOutcome::kFailed;
  }
  const int64_t pages = rank.pool.PagesFor(r.prompt_target);
  const double need =
      static_cast<double>(pages * rank.pool.page_size()) + rank.new_token_ratio * ClippedOutLeft(r);
  const double avail =
      static_cast<double>(AvailablePages(rank) * rank.pool.page_size()) - Promised(rank, *env.reqs);
  if (need > avail || !AllocatePages(rank, pages)) {
    rank.kv_bound = true;
    return ReserveOutcome::kNoRoom;
  }
  r.pages = pages;
  rank.incoming_out_tokens += ClippedOutLeft(r);
  return ReserveOutcome::kReserved;
}

void Scheduler::CancelReservation(RankState& rank, ReqState& r) {
  rank.pool.Free(r.pages);
  r.pages = 0;
  rank.incoming_out_tokens -= ClippedOutLeft(r);
}

bool Scheduler::SteadyDecode(const RankState& rank) const {
  if (cfg_.phase == Phase::kPrefillOnly) return false;
  // A speculative step emits a drawn number of tokens, not one.
  if (!cfg_.speculative.p.empty()) return false;
  if (!rank.prefilling.empty() || !rank.prealloc.empty() || !rank.retracted.empty()) return false;
  return rank.waiting.empty() ||
         static_cast<int64_t>(rank.running.size()) >= cfg_.max_running_requests;
}

int64_t Scheduler::Admit(RankState& rank, SchedulerEnv& env, int32_t idx,
                         const prefix_cache::Match& hit) {
  ReqState& r = (*env.reqs)[idx];
  r.admit_seq = (*env.admit_counter)++;
  rank.queued_tokens -= r.prompt_target;
  if (r.admit_ns < 0) r.admit_ns = env.now_ns;
  if (cfg_.phase == Phase::kDecodeOnly) {
    // The prompt's KV arrives with the request (a decode node of a PD pair).
    if (r.pages > 0) {
      rank.incoming_out_tokens -= ClippedOutLeft(r);  // reserved: now promised as running
    } else {
      r.pages = rank.pool.PagesFor(r.prompt_target);
      AllocatePages(rank, r.pages);  // the caller checked the pages are available
    }
    r.kv_tokens = r.prefilled = r.prompt_target;
    rank.kv_tokens += r.kv_tokens;
    r.status = ReqStatus::kDecoding;
    rank.running.push_back(idx);
    return 0;
  }
  r.status = ReqStatus::kPrefilling;
  rank.prefilling.push_back(idx);
  return LockPrefix(rank, r, hit);
}

bool Scheduler::AddChunk(RankState& rank, SchedulerEnv& env, int32_t idx, int64_t budget,
                         RankBatch* out) {
  ReqState& r = (*env.reqs)[idx];
  const int64_t chunk = std::min(r.prompt_target - r.prefilled, budget);
  if (chunk <= 0) return false;
  // Cached prompt blocks sit in the cache's pages; the request's own pages
  // hold the tokens after them.
  const int64_t pages = rank.pool.PagesFor(r.kv_tokens - r.cached_tokens + chunk) - r.pages;
  if (!AllocatePages(rank, pages)) return false;
  r.pages += pages;
  out->prefill.push_back({idx, chunk, r.kv_tokens});
  return true;
}

bool Scheduler::PrepareDecode(RankState& rank, SchedulerEnv& env, RankBatch* out) {
  RequestTable& reqs = *env.reqs;
  const int64_t page = rank.pool.page_size();
  const bool spec = !cfg_.speculative.p.empty();
  if (spec) {
    for (int32_t i : rank.running) {
      ReqState& r = reqs[i];
      const int64_t t = speculative::DrawStepTokens(cfg_.speculative, cfg_.seed, r.id, r.generated);
      r.step_tokens = static_cast<int32_t>(std::min(t, r.output - r.generated));
    }
  }
  // Pages request r needs before it can append this step's tokens.
  auto grow = [page](const ReqState& r) -> int64_t {
    const int64_t own = r.kv_tokens - r.cached_tokens;
    if (r.step_tokens == 1) return own == r.pages * page;
    return (own + r.step_tokens + page - 1) / page - r.pages;
  };
  int64_t needed = 0, ctx = 0;
  for (int32_t i : rank.running) {
    const ReqState& r = reqs[i];
    needed += grow(r);
    ctx += r.kv_tokens + 1;
  }
  if (needed > AvailablePages(rank)) {
    while (needed > AvailablePages(rank) && !rank.running.empty()) {
      const int32_t victim = rank.running.back();
      rank.running.pop_back();
      needed -= grow(reqs[victim]);
      ctx -= reqs[victim].kv_tokens + 1;
      if (rank.running.empty() && rank.prefilling.empty()) {
        // Alone and still out of pages: re-running it would loop forever.
        Fail(rank, env, victim);
      } else {
        Retract(rank, env, victim);
      }
    }
  }
  if (rank.running.empty()) return false;
  // Most steps cross no page boundary: then nothing to take.
  if (needed > 0) {
    for (int32_t i : rank.running) {
      ReqState& r = reqs[i];
      if (const int64_t g = grow(r); g > 0) {
        AllocatePages(rank, g);  // counted above, so it succeeds
        r.pages += g;
      }
    }
  }
  out->decode = true;
  out->decode_n = static_cast<int64_t>(rank.running.size());
  out->decode_ctx_sum = ctx;
  return true;
}

namespace {

class SglangScheduler : public Scheduler {
 public:
  using Scheduler::Scheduler;
  void FormBatch(RankState& rank, SchedulerEnv& env, RankBatch* out) override {
    RequestTable& reqs = *env.reqs;
    const int64_t page = rank.pool.page_size();
    if (!rank.waiting.empty()) {
      double avail = static_cast<double>(AvailablePages(rank) * page) - Promised(rank, reqs);
      int64_t budget = cfg_.chunked_prefill_tokens;
      if (cfg_.phase != Phase::kDecodeOnly) {
        for (int32_t i : rank.prefilling) budget -= reqs[i].prompt_target - reqs[i].prefilled;
      }
      while (!rank.waiting.empty() &&
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
        if (need > avail) {  // FCFS: no request overtakes the head
          rank.kv_bound = true;  // admission waited on KV, not on a request cap
          break;
        }
        rank.waiting.pop_front();
        // Cached pages this request now locks are no longer available.
        avail -= need + static_cast<double>(Admit(rank, env, idx, hit) * page);
        if (cfg_.phase != Phase::kDecodeOnly) budget -= r.prompt_target - r.prefilled;
      }
    }
    if (cfg_.phase != Phase::kDecodeOnly && !rank.prefilling.empty()) {
      // A prefill iteration: continue chunked requests first, in order.
      int64_t budget = cfg_.chunked_prefill_tokens;
      for (int32_t i : rank.prefilling) {
        if (budget <= 0) break;
        const int64_t before = out->prefill.size();
        if (!AddChunk(rank, env, i, budget, out)) break;
        if (static_cast<int64_t>(out->prefill.size()) > before) budget -= out->prefill.back().tokens;
      }
      if (!out->prefill.empty()) return;
    }
    if (cfg_.phase == Phase::kPrefillOnly) return;
    if (PrepareDecode(rank, env, out)) DecayRatio(rank);
  }

  void SkipDecodeIterations(RankState& rank, int64_t n) const override {
    // One subtraction per iteration, as FormBatch does, so the ratio is the
    // same double either way.
    for (int64_t i = 0; i < n && rank.new_token_ratio > cfg_.min_new_token_ratio; ++i) {
      DecayRatio(rank);
    }
  }

 private:
  void DecayRatio(RankState& rank) const {
    rank.new_token_ratio =
        std::max(cfg_.min_new_token_ratio, rank.new_token_ratio - cfg_.new_token_ratio_decay);
  }
};

class VllmScheduler : public Scheduler {
 public:
  using Scheduler::Scheduler;
  void FormBatch(RankState& rank, SchedulerEnv& env, RankBatch* out) override {
    RequestTable& reqs = *env.reqs;
    int64_t budget = cfg_.chunked_prefill_tokens;
    if (cfg_.phase == Phase::kDecodeOnly) {
      // Resident prompts: admit while their pages (and one to grow) are free.
      while (!rank.waiting.empty() &&
             static_cast<int64_t>(rank.running.size()) < cfg_.max_running_requests) {
        if (FailHeadIfTooLarge(rank, env)) continue;
        const int32_t idx = rank.waiting.front();
        ReqState& r = reqs[idx];
        if (r.pages == 0 && rank.pool.PagesFor(r.prompt_target + 1) > AvailablePages(rank)) {
          rank.kv_bound = true;
          break;
        }
        rank.waiting.pop_front();
        Admit(rank, env, idx);
      }
    }
    if (cfg_.phase != Phase::kPrefillOnly && !rank.running.empty()) {
      // Each request's verified draft positions count in the token budget.
      if (PrepareDecode(rank, env, out)) {
        budget -= out->decode_n * (1 + cfg_.speculative.draft_tokens());
      }
    }
    if (cfg_.phase == Phase::kDecodeOnly) return;
    for (size_t k = 0; k < rank.prefilling.size(); ++k) {
      if (budget <= 0) break;
      if (!AddChunk(rank, env, rank.prefilling[k], budget, out)) {
        // Out of pages. With nothing else running, partial prompts would
        // wait on each other forever: preempt the latest one.
        if (out->empty()) {
          const int32_t victim = rank.prefilling.back();
          rank.prefilling.pop_back();
          if (rank.prefilling.empty()) {
            Fail(rank, env, victim);
          } else {
            Retract(rank, env, victim);
          }
        }
        return;
      }
      budget -= out->prefill.back().tokens;
    }
    while (budget > 0 && !rank.waiting.empty() &&
           static_cast<int64_t>(rank.running.size() + rank.prefilling.size()) <
               cfg_.max_running_requests) {
      if (FailHeadIfTooLarge(rank, env)) continue;
      const int32_t idx = rank.waiting.front();
      ReqState& r = reqs[idx];
      prefix_cache::Match hit;
      const int64_t cached = LookupPrefix(rank, env, idx, &hit);
      const int64_t chunk = std::min(r.prompt_target - cached, budget);
      if (rank.pool.PagesFor(chunk) > AvailablePages(rank)) {
        rank.kv_bound = true;
        break;
      }
      rank.waiting.pop_front();
      Admit(rank, env, idx, hit);
      AddChunk(rank, env, idx, budget, out);  // pages checked above
      budget -= out->prefill.back().tokens;
    }
  }
};

Registry<SchedulerFactory>* BuildRegistry() {
  auto* r = new Registry<SchedulerFactory>("scheduler");
  r->Add(
      "sglang",
      [](const SchedulerConfig& c) -> std::unique_ptr<Scheduler> {
        return std::make_unique<SglangScheduler>(c);
      },
      "prefill-first, KV reservation with new_token_ratio, retract on exhaustion");
  r->Add(
      "vllm",
      [](const SchedulerConfig& c) -> std::unique_ptr<Scheduler> {
        return std::make_unique<VllmScheduler>(c);
      },
      "token budget, decode-first mixed batches, preempt by recompute");
  return r;
}

}  // namespace

Registry<SchedulerFactory>& Schedulers() {
  static Registry<SchedulerFactory>* r = BuildRegistry();
  return *r;
}

}  // namespace capplan::sim
