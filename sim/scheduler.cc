#include "sim/scheduler.h"

#include <algorithm>

#include "sim/batch_digest.h"
#include "sim/rank_cache.h"
#include "sim/request_table.h"

namespace capplan::sim {

void Scheduler::Retract(RankState& rank, SchedulerEnv& env, int32_t idx, Requeue where,
                        bool keep_cached) {
  ReqState& r = (*env.reqs)[idx];
  ReleaseRequestPages(rank, env, idx, /*insert=*/keep_cached);
  r.prefilled = 0;
  r.prompt_target = r.input + r.generated;
  ++r.retractions;
  r.status = ReqStatus::kWaiting;
  if (cfg_.retract_to_host) {
    rank.retracted.push_back(idx);
  } else if (where == Requeue::kFront) {
    rank.waiting.push_front(idx);
  } else {
    rank.waiting.push_back(idx);
  }
  rank.queued_tokens += r.prompt_target;
  ++rank.retractions;
  rank.kv_bound = true;
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
  return Promised(rank, reqs, PromiseSet{rank.running.size(), rank.prefilling.size(),
                                         rank.incoming_out_tokens});
}

double Scheduler::Promised(const RankState& rank, const RequestTable& reqs,
                           const PromiseSet& set) const {
  double promised = 0;
  for (size_t k = 0; k < set.running; ++k) {
    promised += rank.new_token_ratio * ClippedOutLeft(reqs[rank.running[k]]);
  }
  for (size_t k = 0; k < set.prefilling; ++k) {
    const ReqState& r = reqs[rank.prefilling[k]];
    promised += (r.prompt_target - r.prefilled) + rank.new_token_ratio * ClippedOutLeft(r);
  }
  // Zero outside PD runs, so co-located admission is unchanged to the bit.
  if (set.incoming_out_tokens > 0) promised += rank.new_token_ratio * set.incoming_out_tokens;
  return promised;
}

double Scheduler::PromisedAtMost(const RankState& rank, const RequestTable& reqs) const {
  // The relative margin covers the rounding of the n products and sums
  // Promised() adds (at most (n + 1) units in the last place, 2^-52 each).
  const double n = static_cast<double>(rank.running.size());
  double promised = rank.new_token_ratio * static_cast<double>(cfg_.clip_max_new_tokens) * n *
                    (1 + (n + 2) * 0x1p-50);
  for (int32_t i : rank.prefilling) {
    const ReqState& r = reqs[i];
    promised += (r.prompt_target - r.prefilled) + rank.new_token_ratio * ClippedOutLeft(r);
  }
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

bool Scheduler::SettledDecode(const RankState& rank) const {
  if (cfg_.phase == Phase::kPrefillOnly) return false;
  // A speculative step emits a drawn number of tokens, not one.
  if (!cfg_.speculative.p.empty()) return false;
  if (!rank.prefilling.empty() || !rank.prealloc.empty() || !rank.retracted.empty()) return false;
  return rank.waiting.empty() ||
         static_cast<int64_t>(rank.running.size()) >= cfg_.max_running_requests;
}

bool Scheduler::ReserveQueued(RankState& rank, SchedulerEnv& env, std::vector<int32_t>* reserved) {
  RequestTable& reqs = *env.reqs;
  bool resumed = false;
  while (!rank.retracted.empty()) {
    const int32_t idx = rank.retracted.front();
    const ReserveOutcome o = Reserve(rank, env, idx);
    if (o == ReserveOutcome::kNoRoom) return resumed;
    rank.retracted.pop_front();
    if (o == ReserveOutcome::kFailed) {
      rank.queued_tokens -= reqs[idx].prompt_target;
      continue;
    }
    reqs[idx].status = ReqStatus::kWaiting;
    rank.waiting.push_back(idx);
    resumed = true;
  }
  while (!rank.prealloc.empty()) {
    const int32_t idx = rank.prealloc.front();
    ReqState& r = reqs[idx];
    const ReserveOutcome o = Reserve(rank, env, idx);
    if (o == ReserveOutcome::kNoRoom) break;
    rank.prealloc.pop_front();
    if (o == ReserveOutcome::kFailed) {
      rank.queued_tokens -= r.prompt_target;
      continue;
    }
    r.status = ReqStatus::kAwaitingKv;
    reserved->push_back(idx);
  }
  return resumed;
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

int64_t Scheduler::GrowPages(const RankState& rank, const ReqState& r) const {
  const int64_t page = rank.pool.page_size();
  const int64_t own = r.kv_tokens - r.cached_tokens;
  if (r.step_tokens == 1) return own == r.pages * page;
  return (own + r.step_tokens + page - 1) / page - r.pages;
}

int64_t Scheduler::DecodePagesNeeded(RankState& rank, SchedulerEnv& env, int64_t* ctx_sum) {
  RequestTable& reqs = *env.reqs;
  if (!cfg_.speculative.p.empty()) {
    for (int32_t i : rank.running) {
      ReqState& r = reqs[i];
      const int64_t t = speculative::DrawStepTokens(cfg_.speculative, cfg_.seed, r.id, r.generated);
      r.step_tokens = static_cast<int32_t>(std::min(t, r.output - r.generated));
    }
  }
  int64_t needed = 0, ctx = 0;
  growing_.clear();
  // The requests the pool's last pass left at the batch's front, one token
  // a step each, are known.
  size_t j = 0;
  if (env.digest != nullptr && cfg_.speculative.p.empty()) j = env.digest->Covers(rank);
  if (j > 0) {
    ctx = env.digest->ctx_sum;
    growing_ = env.digest->growing;
    needed = static_cast<int64_t>(growing_.size());
  }
  // Once per step for every running request: the loop keeps what it reads
  // besides the requests in registers.
  ReqState* const* at = reqs.table();
  const int32_t* run = rank.running.data();
  const size_t n = rank.running.size();
  const int64_t page = rank.pool.page_size();
  for (; j < n; ++j) {
    const ReqState& r = *at[run[j]];
    ctx += r.kv_tokens + 1;
    const int64_t own = r.kv_tokens - r.cached_tokens;
    // GrowPages, the one-token case inline.
    const int64_t g = r.step_tokens == 1 ? own == r.pages * page : GrowPages(rank, r);
    if (g > 0) [[unlikely]] {
      needed += g;
      growing_.push_back(run[j]);
    }
  }
  if (ctx_sum != nullptr) *ctx_sum = ctx;
  return needed;
}

bool Scheduler::CommitDecode(RankState& rank, SchedulerEnv& env, int64_t needed, RankBatch* out,
                             int64_t ctx_sum) {
  if (rank.running.empty()) return false;
  RequestTable& reqs = *env.reqs;
  if (ctx_sum >= 0) {
    // The requests DecodePagesNeeded found at a page boundary (most steps
    // cross none) take their pages.
    for (int32_t idx : growing_) {
      ReqState& r = reqs[idx];
      const int64_t g = GrowPages(rank, r);
      AllocatePages(rank, g);  // counted by the caller, so it succeeds
      r.pages += g;
    }
  } else {
    ctx_sum = 0;
    for (int32_t i : rank.running) {
      ReqState& r = reqs[i];
      ctx_sum += r.kv_tokens + 1;
      if (needed == 0) continue;
      if (const int64_t g = GrowPages(rank, r); g > 0) {
        AllocatePages(rank, g);  // counted by the caller, so it succeeds
        r.pages += g;
      }
    }
  }
  out->decode = true;
  out->decode_n = static_cast<int64_t>(rank.running.size());
  out->decode_ctx_sum = ctx_sum;
  return true;
}

bool Scheduler::PrepareDecodeRetractLatest(RankState& rank, SchedulerEnv& env, RankBatch* out) {
  RequestTable& reqs = *env.reqs;
  int64_t ctx = 0;
  int64_t needed = DecodePagesNeeded(rank, env, &ctx);
  if (needed > AvailablePages(rank)) ctx = -1;  // requests leave: summed again
  while (needed > AvailablePages(rank) && !rank.running.empty()) {
    const int32_t victim = rank.running.back();
    rank.running.pop_back();
    needed -= GrowPages(rank, reqs[victim]);
    if (rank.running.empty() && rank.prefilling.empty()) {
      // Alone and still out of pages: re-running it would loop forever.
      Fail(rank, env, victim);
    } else {
      Retract(rank, env, victim, Requeue::kFront);
    }
  }
  return CommitDecode(rank, env, needed, out, ctx);
}

void Scheduler::AdmitResident(RankState& rank, SchedulerEnv& env) {
  RequestTable& reqs = *env.reqs;
  while (!rank.waiting.empty() &&
         reqs[rank.waiting.front()].arrival_ns < env.visible_before_ns &&
         static_cast<int64_t>(rank.running.size()) < cfg_.max_running_requests) {
    if (FailHeadIfTooLarge(rank, env)) continue;
    const int32_t idx = rank.waiting.front();
    const ReqState& r = reqs[idx];
    if (r.pages == 0 && rank.pool.PagesFor(r.prompt_target + 1) > AvailablePages(rank)) {
      rank.kv_bound = true;
      break;
    }
    rank.waiting.pop_front();
    Admit(rank, env, idx);
  }
}

void ApplyEngineScheduling(const models::EngineDefaults& d, SchedulerConfig* c) {
  c->admit_whole_prompt = d.admit_whole_prompt;
  if (d.new_token_ratio_init <= 0) return;
  c->init_new_token_ratio = d.new_token_ratio_init;
  c->min_new_token_ratio = d.new_token_ratio_init * d.new_token_ratio_min_factor;
  c->new_token_ratio_decay = (c->init_new_token_ratio - c->min_new_token_ratio) /
                             static_cast<double>(d.new_token_ratio_decay_steps);
  c->clip_max_new_tokens = d.clip_max_new_tokens;
  c->retract_decode_steps = d.retract_decode_steps;
  c->retract_until = d.retract_until == "next_decode_fits" ? RetractUntil::kNextDecodeFits
                                                           : RetractUntil::kDecodeStepsHeadroom;
}

bool SchedulingFilled(const SchedulerConfig& c) {
  return c.init_new_token_ratio > 0 && c.clip_max_new_tokens > 0 && c.retract_decode_steps > 0 &&
         c.retract_until != RetractUntil::kUnset;
}

Status FillSglangDefaults(SchedulerConfig* c) {
  if (SchedulingFilled(*c)) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(models::EngineResolution e, models::ResolveEngine("sglang", ""));
  SchedulerConfig d;
  ApplyEngineScheduling(e.profile->defaults, &d);
  if (d.init_new_token_ratio <= 0) {
    return Status::Internal(
        "models/engines/sglang.json: the latest entry has no new_token_ratio_init");
  }
  if (c->init_new_token_ratio <= 0) {
    c->init_new_token_ratio = d.init_new_token_ratio;
    c->min_new_token_ratio = d.min_new_token_ratio;
    c->new_token_ratio_decay = d.new_token_ratio_decay;
  }
  if (c->clip_max_new_tokens <= 0) c->clip_max_new_tokens = d.clip_max_new_tokens;
  if (c->retract_decode_steps <= 0) c->retract_decode_steps = d.retract_decode_steps;
  if (c->retract_until == RetractUntil::kUnset) c->retract_until = d.retract_until;
  return Status::Ok();
}

namespace {

Registry<SchedulerFactory>* BuildRegistry() {
  auto* r = new Registry<SchedulerFactory>("scheduler");
  r->Add("sglang", MakeSglangScheduler,
         "prefill-first, KV reservation with new_token_ratio, retract on exhaustion");
  r->Add("vllm", MakeVllmScheduler,
         "token budget, running requests first, preempt the newest by recompute");
  return r;
}

}  // namespace

Registry<SchedulerFactory>& Schedulers() {
  static Registry<SchedulerFactory>* r = BuildRegistry();
  return *r;
}

}  // namespace capplan::sim
