// ServingPool's fast-forward of steady decode (sim/serving_pool.h, header
// comment): the skipped iterations' prices, tokens, pages and scheduler
// state in closed form.
#include <algorithm>
#include <climits>

#include "sim/serving_pool.h"

namespace capplan::sim {

int64_t ServingPool::StepNs(double seconds) {
  return std::max<int64_t>(1, std::llround(seconds * 1e9));
}

int64_t ServingPool::Horizon() const {
  const bool only_arrivals = listener_ == nullptr && !opts_.reserve_before_admit &&
                             !opts_.hold_kv_after_prefill && follow_.empty() && backlog_.empty();
  return only_arrivals ? next_arrival_ns_ : q_->next_time();
}

int64_t ServingPool::SteadyIterations(const Replica& rep, int64_t* itl_weight) const {
  const RequestTable& reqs = reqs_;
  int64_t limit = INT64_MAX, weight = 0;
  bool any = false;
  for (size_t k = 0; k < rep.ranks.size(); ++k) {
    const RankState& rank = rep.ranks[k];
    if (!sched_->SteadyDecode(rank)) return 0;
    if (rank.running.empty()) continue;
    if (!rep.batches[k].decode || !rep.batches[k].prefill.empty()) return 0;
    any = true;
    for (int32_t idx : rank.running) {
      const ReqState& r = reqs[idx];
      // A first token sets TTFT rather than an ITL entry: that step end runs
      // as an event.
      if (r.last_token_ns < 0) return 0;
      limit = std::min(limit, r.output - r.generated - 1);
      weight += !r.warmup;
    }
  }
  if (!any || limit <= 0) return 0;
  *itl_weight = weight;
  // After k skipped step ends every request holds the pages for context
  // kv_tokens + k + 1 (pages are taken lazily, one at a page boundary).
  for (const RankState& rank : rep.ranks) {
    if (rank.running.empty()) continue;
    auto needed = [&](int64_t k) {
      int64_t n = 0;
      for (int32_t idx : rank.running) {
        const ReqState& r = reqs[idx];
        n += std::max<int64_t>(0,
                               rank.pool.PagesFor(r.kv_tokens - r.cached_tokens + k + 1) - r.pages);
      }
      return n;
    };
    const int64_t free = rank.pool.free_pages();
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
    if (b.decode) same = std::min(same, RankSamePriceRun(b, i));
  }
  return same;
}

// One rank's part of SamePriceRun; leaves work_ as iteration i's step.
int64_t ServingPool::RankSamePriceRun(const RankBatch& b, int64_t i) {
  work_.prefill.clear();
  work_.decode_n = b.decode_n;
  work_.decode_ctx_sum = b.decode_ctx_sum + i * b.decode_n;
  return (pricer_.SameCostUntil(work_) - work_.decode_ctx_sum) / b.decode_n + 1;
}

// Iteration i's price: the slowest rank's cost (valid until the next
// Price() call), its duration, and SamePriceRun(rep, i).
const StepCost* ServingPool::PriceSteadyStep(const Replica& rep, int64_t i, int64_t* dur_ns,
                                             int64_t* same) {
  if (rep.batches.size() == 1) {  // one rank: one price, and its range
    *same = RankSamePriceRun(rep.batches[0], i);
    const StepCost& c = pricer_.Price(work_);
    *dur_ns = StepNs(c.seconds);
    return &c;
  }
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

int64_t ServingPool::FastForward(int rep_i, int64_t dur_ns) {
  Replica& rep = replicas_[rep_i];
  // The first skipped step end must come before the horizon: check that
  // (cheap) before the O(requests) look at the replica.
  const int64_t horizon = Horizon();
  if (horizon <= now_ + dur_ns) return now_ + dur_ns;
  int64_t itl_weight = 0;  // tokens per step end that enter the ITL histogram
  const int64_t limit = SteadyIterations(rep, &itl_weight);
  if (limit == 0) return now_ + dur_ns;
  RequestTable& reqs = reqs_;
  // Invariant: iteration `skipped` starts at t, lasts d and costs `cost`,
  // like the `same` - 1 iterations after it.
  const StepCost* cost = &slowest_copy_;
  int64_t skipped = 0, t = now_, d = dur_ns, same = SamePriceRun(rep, 0);
  while (skipped < limit) {
    int64_t m = std::min(same, limit - skipped);
    // Every skipped step end must come before the next queued event (the
    // division only when the range reaches it).
    if (horizon != INT64_MAX && t + m * d >= horizon) m = (horizon - 1 - t) / d;
    if (m <= 0) break;
    // Iteration 0 is already counted, and the first step end's ITL entry is
    // per request (below).
    const int64_t n = skipped == 0 ? m - 1 : m;
    if (n > 0) {
      res_.busy.AddTimes(*cost, n);
      if (itl_weight > 0) res_.itl_ns.Add(d, itl_weight * n);
    }
    t += m * d;
    skipped += m;
    same -= m;
    if (same == 0) cost = PriceSteadyStep(rep, skipped, &d, &same);
  }
  if (skipped == 0) return now_ + dur_ns;
  res_.busy.Add(*cost);  // the iteration that ends with an ordinary event
  res_.iterations += skipped;
  res_.fast_forward_iterations += skipped;
  const int64_t first_end = now_ + dur_ns;
  int64_t kv = 0;  // the replica's tokens at the last skipped step end, its peak
  for (size_t k = 0; k < rep.ranks.size(); ++k) {
    RankState& rank = rep.ranks[k];
    if (rank.running.empty()) {
      kv += rank.kv_tokens;
      continue;
    }
    int64_t pages = 0;
    for (int32_t idx : rank.running) {
      ReqState& r = reqs[idx];
      if (!r.warmup) res_.itl_ns.Add(first_end - r.last_token_ns);
      r.kv_tokens += skipped;
      r.generated += skipped;
      r.last_token_ns = t;
      const int64_t p =
          std::max<int64_t>(0, rank.pool.PagesFor(r.kv_tokens - r.cached_tokens + 1) - r.pages);
      r.pages += p;
      pages += p;
    }
    rank.pool.Allocate(pages);  // SteadyIterations checked they are free
    const int64_t n = static_cast<int64_t>(rank.running.size());
    rank.kv_tokens += n * skipped;
    kv += rank.kv_tokens;
    rep.batches[k].decode_ctx_sum += n * skipped;
    sched_->SkipDecodeIterations(rank, skipped);
  }
  // The next step end may free requests' pages before its tokens count.
  res_.peak_kv_tokens = std::max(res_.peak_kv_tokens, kv);
  return t + d;
}

}  // namespace capplan::sim
