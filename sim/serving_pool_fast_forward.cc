// ServingPool's fast-forward of steady decode (sim/serving_pool.h, header
// comment): the skipped iterations' prices, tokens, pages and scheduler
// state in closed form.
#include <algorithm>
#include <climits>

#include "sim/serving_pool.h"

namespace capplan::sim {

bool ServingPool::OnlyArrivalsReach() const {
  return listener_ == nullptr && !opts_.reserve_before_admit && !opts_.hold_kv_after_prefill &&
         follow_.empty() && backlog_.empty();
}

int64_t ServingPool::Horizon() const {
  return OnlyArrivalsReach() ? next_arrival_ns_ : q_->next_time();
}

// The requests a folded step end sends go to this replica, and its
// schedules do not see them at the next step end (sim/serving_pool.h).
bool ServingPool::FoldSendsUnseen() const {
  return cfg_.sched.overlap_schedule && replicas_.size() == 1 && listener_ == nullptr &&
         !opts_.reserve_before_admit && !opts_.hold_kv_after_prefill && follow_.empty();
}

// A prefix cache that only keeps requests' own blocks (SimConfig::
// prefix_self_only) is looked up by preempted requests alone: a completion
// only appends its blocks to it, in the order requests finish, and the skip
// takes only free pages, so it evicts nothing.
bool ServingPool::NoSharedCache() const { return caches_.empty() || cfg_.prefix_self_only; }

bool ServingPool::CanFoldCompletions(const Replica& rep) const {
  return (OnlyArrivalsReach() || FoldSendsUnseen()) && NoSharedCache() && rep.ranks.size() == 1 &&
         rep.ranks[0].waiting.empty();
}

// The step end at t may have its tokens emitted when the skip ends: it is
// the next event the queue pops (nothing is queued before it, and no other
// replica or pool runs in between), and one rank without a shared prefix
// cache (NoSharedCache), one token a step, so the requests it finishes
// leave in batch order with nothing reading the rank's token count in a way
// that could change (a one-target router picks it whatever its load).
bool ServingPool::PreEmits(const Replica& rep, int64_t t) const {
  return replicas_.size() == 1 && rep.ranks.size() == 1 && NoSharedCache() && !speculative_ &&
         listener_ == nullptr && !opts_.reserve_before_admit && !opts_.hold_kv_after_prefill &&
         cfg_.sched.phase != Phase::kPrefillOnly && t < q_->next_time();
}

int64_t ServingPool::SteadyIterations(const Replica& rep, Skip* s) {
  const bool fold = s->fold, first_tokens = s->first_tokens;
  const RequestTable& reqs = reqs_;
  for (size_t k = 0; k < rep.ranks.size(); ++k) {
    const RankState& rank = rep.ranks[k];
    if (!sched_->SteadyDecode(rank)) return 0;
    if (rank.running.empty()) continue;
    if (!rep.batches[k].decode || !rep.batches[k].prefill.empty()) return 0;
    // A first token sets TTFT rather than an ITL entry: unless the skip
    // may start from it (StartAfterFirstTokens), that step end runs as an
    // event. A request admitted since the last one is the last running, so
    // that is looked at before the rest.
    if (!first_tokens && reqs[rank.running.back()].last_token_ns < 0) return 0;
  }
  // Over the requests' last iterations (the step end that finishes each).
  int64_t first_last = INT64_MAX, last_last = 0, weight = 0;
  // Folding (one rank), the pages every request read here takes up to its
  // last iteration: at least needed(limit) below when it read them all.
  int64_t fold_pages = 0;
  const size_t known = TakeDigest(rep, &first_last, &last_last, &weight);
  s->known = known;
  s->known_weight = weight;
  const bool count_pages = fold && known == 0;
  bool any = false, gives_first = false;
  ReqState* const* at = reqs.table();
  for (const RankState& rank : rep.ranks) {
    const KvPool& pool = rank.pool;
    any = any || !rank.running.empty();
    for (auto it = rank.running.begin() + static_cast<std::ptrdiff_t>(known);
         it != rank.running.end(); ++it) {
      const int32_t idx = *it;
      const ReqState& r = *at[idx];
      if (r.last_token_ns < 0) {
        if (!first_tokens) return 0;
        gives_first = true;
      }
      const int64_t last = r.output - r.generated - 1;
      first_last = std::min(first_last, last);
      last_last = std::max(last_last, last);
      weight += !r.warmup;
      if (count_pages) {
        const int64_t own = r.kv_tokens - r.cached_tokens;
        fold_pages += std::max<int64_t>(0, pool.PagesFor(own + last + 1) - r.pages);
      }
    }
  }
  // Folding, the last iteration must still hold a request to end as an
  // ordinary event. The first completion sends a waiting client's request,
  // if any, first seen at the step end two later (FoldSendsUnseen): the
  // skip ends there, and the requests finishing after it are not looked at.
  int64_t limit = fold ? last_last : first_last;
  if (fold && !backlog_.empty()) limit = std::min(limit, first_last + 2);
  if (!any || limit <= 0) return 0;
  // Iteration 0's step end gives first tokens: no request may finish there.
  s->first_tokens = gives_first;
  if (gives_first && first_last < 1) return 0;
  s->itl_weight = weight;
  if (count_pages && fold_pages <= rep.ranks[0].pool.free_pages()) return limit;
  return PagedLimit(rep, limit);
}

// The most iterations up to `limit` whose pages are free on every rank.
int64_t ServingPool::PagedLimit(const Replica& rep, int64_t limit) const {
  const RequestTable& reqs = reqs_;
  // After k skipped step ends every request still running holds the pages
  // for context kv_tokens + k + 1 (pages are taken lazily, one at a page
  // boundary); one finished at iteration j < k held them for j. Pages the
  // finished ones free are not counted, so the bound is safe.
  for (const RankState& rank : rep.ranks) {
    if (rank.running.empty()) continue;
    auto needed = [&](int64_t k) {
      int64_t n = 0;
      for (int32_t idx : rank.running) {
        const ReqState& r = reqs[idx];
        const int64_t grown = std::min(k, r.output - r.generated - 1);
        n += std::max<int64_t>(
            0, rank.pool.PagesFor(r.kv_tokens - r.cached_tokens + grown + 1) - r.pages);
      }
      return n;
    };
    const int64_t free = rank.pool.free_pages();
    // A request holds the pages of its context, and pages are rounded up,
    // so its context grown by at most `limit` tokens, its next one included,
    // takes at most PagesFor(limit + 1) more: when that fits for every
    // request, so does needed(limit), without reading them.
    const int64_t n = static_cast<int64_t>(rank.running.size());
    if (n * rank.pool.PagesFor(limit + 1) <= free) continue;
    if (needed(limit) <= free) continue;
    int64_t lo = 0, hi = limit;  // needed(lo) fits, needed(hi) does not
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (needed(mid) <= free ? lo : hi) = mid;
    }
    limit = lo;
    if (limit == 0) return 0;
  }
  return limit;
}

// How many iterations from iteration `i` of the steady run (contexts grown
// by i tokens each) on cost the same: the shortest such range over the
// ranks.
int64_t ServingPool::SamePriceRun(const Replica& rep, int64_t i) {
  int64_t same = INT64_MAX;
  for (const RankBatch& b : rep.batches) {
    int64_t until = 0;
    if (b.decode) same = std::min(same, RankSamePriceRun(b, i, &until));
  }
  return same;
}

// One rank's part of SamePriceRun; leaves work_ as iteration i's step and
// *until as the last context sum priced like it.
inline int64_t ServingPool::RankSamePriceRun(const RankBatch& b, int64_t i, int64_t* until) {
  work_.prefill.clear();
  work_.decode_n = b.decode_n;
  work_.decode_ctx_sum = b.decode_ctx_sum + i * b.decode_n;
  *until = pricer_.SameCostUntil(work_);
  return RunLength(*until, work_.decode_ctx_sum, b.decode_n);
}

// A slot taken for the range of n decode requests at context sum ctx, up
// to `until`; it also keeps where the next range ends, so that crossing
// into it asks the pricer nothing.
void ServingPool::FillRangeSlot(RangeSlot& s, int64_t n, int64_t ctx, int64_t until) {
  FlushBusy(s);
  work_.prefill.clear();
  work_.decode_n = n;
  work_.decode_ctx_sum = ctx;
  s.cost = pricer_.Price(work_);
  s.decode_n = n;
  s.until = until;
  s.dur_ns = StepNs(s.cost.seconds);
  s.itl_bucket = LogHistogram::BucketOf(s.dur_ns);
  work_.decode_ctx_sum = until + 1;
  s.next_until = pricer_.SameCostUntil(work_);
}

// Iteration i's price: the slowest rank's cost (valid until the next
// Price() call), its duration, SamePriceRun(rep, i), and the range's slot
// when it has one (then the slot counts the iterations it costs).
inline const StepCost* ServingPool::PriceSteadyStep(const Replica& rep, int64_t i, int64_t* dur_ns,
                                                    int64_t* same, RangeSlot** slot) {
  if (rep.batches.size() != 1) {
    *slot = nullptr;
    return PriceRanks(rep, i, dur_ns, same);
  }
  // One rank: one price, and its range, priced once however often
  // fast-forward crosses it. Every context sum in the range after *slot's
  // (the last one priced) prices alike, so a run that steps into it needs
  // no range from the pricer.
  const RankBatch& b = rep.batches[0];
  const int64_t n = b.decode_n;
  const int64_t ctx = b.decode_ctx_sum + i * n;
  const RangeSlot* prev = *slot;
  int64_t until = 0;
  if (prev != nullptr && prev->decode_n == n && ctx > prev->until && ctx <= prev->next_until) {
    until = prev->next_until;
    *same = RunLength(until, ctx, n);
  } else {
    *same = RankSamePriceRun(b, i, &until);
  }
  RangeSlot& s = range_slots_[(static_cast<uint64_t>(until) * 0x9E3779B97F4A7C15ull +
                               static_cast<uint64_t>(n)) >>
                              (64 - kRangeSlotBits)];
  if (s.decode_n != n || s.until != until) [[unlikely]] {
    FillRangeSlot(s, n, ctx, until);
  }
  *dur_ns = s.dur_ns;
  *slot = &s;
  return &s.cost;
}

// PriceSteadyStep with several ranks.
const StepCost* ServingPool::PriceRanks(const Replica& rep, int64_t i, int64_t* dur_ns,
                                        int64_t* same) {
  const StepCost* slowest = nullptr;
  *same = SamePriceRun(rep, i);
  for (const RankBatch& b : rep.batches) {
    if (!b.decode) continue;
    work_.prefill.clear();
    work_.decode_n = b.decode_n;
    work_.decode_ctx_sum = b.decode_ctx_sum + i * b.decode_n;
    const StepCost& c = pricer_.Price(work_);
    if (slowest == nullptr || c.seconds > slowest->seconds) {
      slowest_copy_ = c;  // the next rank's Price() may reuse c's storage
      slowest = &slowest_copy_;
    }
  }
  *dur_ns = StepNs(slowest->seconds);
  return slowest;
}

// Busy time is added per range slot when the slot is reused and at the
// end of the run: one multiply-add per price instead of one per range.
inline void ServingPool::AddBusy(const StepCost& cost, RangeSlot* slot, int64_t times) {
  if (slot != nullptr) {
    slot->iterations += times;
  } else {
    res_.busy.AddTimes(cost, times);
  }
}

void ServingPool::FlushBusy(RangeSlot& s) {
  if (s.iterations > 0) res_.busy.AddTimes(s.cost, s.iterations);
  s.iterations = 0;
}

// Iteration c's pages, as its batch took them: the pool's peak, if any,
// is here, before the finished requests free theirs. The finished ones
// take theirs now; the others' are counted by the next pass over the
// batch (Skip::fold_c), usually CatchUpRank's, two step ends later.
void ServingPool::FoldPages(RankState& rank, int64_t c, Skip* f) {
  RequestTable& reqs = reqs_;
  const KvPool& pool = rank.pool;
  auto grow = [&pool](const ReqState& r, int64_t i) {
    return std::max<int64_t>(0, pool.PagesFor(r.kv_tokens - r.cached_tokens + i + 1) - r.pages);
  };
  int64_t pages = 0;
  if (f->fold_c < 0) {
    for (size_t e = f->next; e < ends_.size() && ends_[e].first == c; ++e) {
      ReqState& r = reqs[ends_[e].second];
      const int64_t p = grow(r, c);
      r.pages += p;
      pages += p;
    }
    rank.pool.Allocate(pages);  // SteadyIterations checked they are free
    f->fold_c = c;
    f->fold_base = rank.pool.used_pages();
    return;
  }
  int64_t at_fold = 0;
  for (int32_t idx : rank.running) {
    ReqState& r = reqs[idx];
    at_fold += grow(r, f->fold_c);
    const int64_t p = grow(r, c);
    r.pages += p;
    pages += p;
  }
  rank.pool.NotePeak(f->fold_base + at_fold);
  rank.pool.Allocate(pages);
  f->fold_c = -1;
}

void ServingPool::FoldCompletions(Replica& rep, int64_t c, int64_t t, Skip* f) {
  RankState& rank = rep.ranks[0];
  RankBatch& b = rep.batches[0];
  RequestTable& reqs = reqs_;
  const int64_t now = now_;  // Send() moves it to t
  FoldPages(rank, c, f);
  const int64_t n = static_cast<int64_t>(rank.running.size());
  rank.kv_tokens += n * (c + 1 - f->synced);
  f->synced = c + 1;
  // The tokens at the step end before this one: the peak since the last
  // completion (they only grow in between).
  if (c >= 1) res_.peak_kv_tokens = std::max(res_.peak_kv_tokens, rank.kv_tokens - n);
  while (f->next < ends_.size() && ends_[f->next].first == c) {
    const int32_t idx = ends_[f->next++].second;
    ReqState& r = reqs[idx];
    if (r.last_token_ns < 0) {
      r.first_token_ns = f->first_end;                          // StartAfterFirstTokens
    } else if (!r.warmup && r.last_token_ns != f->first_end) {  // not fresh (StartFromPrefill)
      res_.itl_ns.Add(f->first_end - r.last_token_ns);
    }
    if (!r.warmup) --f->itl_weight;
    r.kv_tokens += c + 1;
    r.generated += c + 1;
    r.last_token_ns = t;
    --b.decode_n;
    b.decode_ctx_sum -= r.kv_tokens - c;  // its context in iteration 0
    const auto at = std::find(rank.running.begin(), rank.running.end(), idx);
    if (static_cast<size_t>(at - rank.running.begin()) < f->known) {
      --f->known;
      f->known_weight -= !r.warmup;
    }
    rank.running.erase(at);
    Finish(rank, r, t);
    ++res_.fast_forward_completions;
  }
  res_.peak_kv_tokens = std::max(res_.peak_kv_tokens, rank.kv_tokens);
  now_ = now;
}

int64_t ServingPool::FastForward(int rep_i, int64_t dur_ns) {
  Replica& rep = replicas_[rep_i];
  Skip s;
  if (!BeginSkip(rep, dur_ns, &s)) return now_ + dur_ns;
  SkipRanges(rep, &s);
  if (s.skipped == 0) {
    if (s.prefill) UndoStartFromPrefill(rep);
    return now_ + dur_ns;
  }
  EndSkip(rep, &s);
  // The step that ends as an event began at the last skipped step end.
  rep.step_start_ns = s.t;
  return s.t + s.d;
}

// The skip's bounds (header comment) and its first range; false when no
// step end can be skipped.
bool ServingPool::BeginSkip(Replica& rep, int64_t dur_ns, Skip* s) {
  // The first skipped step end must come before the horizon: check that
  // (cheap) before the O(requests) look at the replica.
  s->horizon = Horizon();
  if (s->horizon <= now_ + dur_ns) return false;
  s->fold = CanFoldCompletions(rep);
  s->first_end = now_ + dur_ns;
  fresh_.clear();
  for (const RankBatch& b : rep.batches) s->prefill = s->prefill || !b.prefill.empty();
  // Iteration 0's step end changes a batch with prompts: it must come first.
  if (s->prefill &&
      (!s->fold || s->first_end >= q_->next_time() || !StartFromPrefill(rep, s->first_end))) {
    return false;
  }
  // Iteration 0's step end may give first tokens when it is the next event
  // and its schedule would run at once (RunDueSchedules).
  s->first_tokens = !s->prefill && direct_schedule_ && s->first_end < q_->next_time();
  s->limit = SteadyIterations(rep, s);
  if (s->limit == 0) {
    if (s->prefill) UndoStartFromPrefill(rep);
    return false;
  }
  ends_.clear();
  if (s->fold) {
    for (int32_t idx : rep.ranks[0].running) {
      const ReqState& r = reqs_[idx];
      const int64_t last = r.output - r.generated - 1;
      if (last < s->limit) ends_.push_back({last, idx});
    }
    // Those finishing at one step end finish in batch order, as there (the
    // order their blocks enter a prefix cache).
    std::stable_sort(ends_.begin(), ends_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  // A folded step end retires requests, which leave the in-flight count: it
  // must come before every queued event, any pool's or replica's, so that
  // count moves in time order.
  s->fold_horizon = s->fold ? std::min(s->horizon, q_->next_time()) : INT64_MIN;
  s->end = NextEnd(*s);
  if (s->first_tokens) {
    StartAfterFirstTokens(rep, s);
    return true;
  }
  s->cost = step_cost_;  // OnSchedule's price of iteration 0
  s->t = now_;
  s->d = dur_ns;
  // Iteration 0 with prompts is priced alone.
  s->same = s->prefill ? 1 : SamePriceRun(rep, 0);
  return true;
}

// Skips price range after price range (folding completions) up to the
// limit or the horizons.
void ServingPool::SkipRanges(Replica& rep, Skip* s) {
  // Locals in the loop (registers); *s is brought up to date on the way out
  // and around a fold, which reads and moves it.
  const int64_t limit = s->limit, horizon = s->horizon, fold_horizon = s->fold_horizon;
  const int64_t priced = s->priced;
  int64_t skipped = s->skipped, t = s->t, d = s->d, same = s->same, end = s->end;
  int64_t weight = s->itl_weight;
  const StepCost* cost = s->cost;
  RangeSlot* slot = s->slot;
  while (skipped < limit) {
    int64_t m = std::min(same, limit - skipped);
    // Every skipped step end must come before the next queued event (the
    // division only when the range reaches it).
    if (horizon != INT64_MAX && t + m * d >= horizon) m = (horizon - 1 - t) / d;
    // A range ends at a step end that finishes requests; one the fold
    // horizon rules out ends the run as an ordinary event instead.
    bool last = false;
    if (end < skipped + m) {
      m = end + 1 - skipped;
      if (t + m * d >= fold_horizon) {
        --m;
        last = true;
      }
    }
    if (m <= 0) break;
    // The iterations the schedule priced are already counted (Skip::priced),
    // and the first step end's ITL entries are per request (EndSkip).
    const int64_t busy_n = skipped < priced ? m - (priced - skipped) : m;
    const int64_t n = skipped == 0 ? m - 1 : m;
    if (busy_n > 0) AddBusy(*cost, slot, busy_n);
    if (n > 0 && weight > 0) {
      if (slot != nullptr) {
        res_.itl_ns.AddToBucket(slot->itl_bucket, d, weight * n);
      } else {
        res_.itl_ns.Add(d, weight * n);
      }
    }
    t += m * d;
    skipped += m;
    same -= m;
    if (!last && end == skipped - 1) {  // end may be INT64_MAX
      s->itl_weight = weight;
      FoldCompletions(rep, skipped - 1, t, s);
      weight = s->itl_weight;
      end = NextEnd(*s);
      same = 0;  // a smaller batch: priced afresh
    }
    if (same == 0) cost = PriceSteadyStep(rep, skipped, &d, &same, &slot);
    if (last) break;
  }
  s->itl_weight = weight;
  s->skipped = skipped;
  s->t = t;
  s->d = d;
  s->same = same;
  s->end = end;
  s->cost = cost;
  s->slot = slot;
}

// The skipped iterations' counts, and every request brought to the last
// skipped step end (or the one after, below).
void ServingPool::EndSkip(Replica& rep, Skip* s) {
  // The iteration that ends with an ordinary event, unless its schedule's
  // price is already counted (StartAfterFirstTokens skipped only step 0).
  if (s->skipped >= s->priced) AddBusy(*s->cost, s->slot, 1);
  const int64_t skipped = s->skipped - (s->priced - 1);  // iterations not priced alone
  res_.iterations += skipped;
  res_.fast_forward_iterations += skipped;
  // That step end comes after the next arrival. Alone in its pool, the
  // replica's requests are read by nothing until then (an arrival only
  // queues), so when it finishes none of them (past `limit`, or at `end`,
  // a request finishes there), its tokens are emitted here too and its
  // event only ends the step (Replica::tokens_emitted).
  const int64_t applied = s->fold && replicas_.size() == 1 && s->t + s->d >= s->horizon &&
                                  s->skipped < s->limit && s->end != s->skipped
                              ? 1
                              : 0;
  // Or, when that step end is the next event (PreEmits), its tokens are
  // emitted here whatever it finishes: its event only finishes the
  // requests listed in emitted_done_, without another pass over the batch.
  const int64_t pre = applied == 0 && PreEmits(rep, s->t + s->d) ? 1 : 0;
  const int64_t emit = applied + pre;
  rep.tokens_emitted = emit == 1;
  emitted_done_.clear();
  if (emit == 1 && s->itl_weight > 0) res_.itl_ns.Add(s->d, s->itl_weight);
  int64_t kv = 0;  // the replica's tokens at the last skipped step end (or applied's), its peak
  for (size_t k = 0; k < rep.ranks.size(); ++k) kv += CatchUpRank(rep, k, *s, emit, pre);
  // The next step end may free requests' pages before its tokens count.
  res_.peak_kv_tokens = std::max(res_.peak_kv_tokens, kv);
}

}  // namespace capplan::sim
