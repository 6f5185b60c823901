// ServingPool's fast-forward (sim/serving_pool.h, header comment): at a
// skip's end, every request brought up to its last skipped step end (or
// the one after), and what the next skip may take from that pass.
#include <algorithm>
#include <bit>
#include <climits>

#include "sim/serving_pool.h"

namespace capplan::sim {

namespace {

// What CatchUpRequests needs of the skip and of the rank's pages.
struct CatchUpStep {
  int64_t steps = 0;      // step ends whose tokens are out
  int64_t first_end = 0;  // the first skipped step end
  int64_t last_ns = 0;    // the last one whose tokens are out
  // The last token time of most requests, entered as one weighted gap;
  // INT64_MIN when the first request's gives no ITL entry.
  int64_t common = INT64_MIN;
  int64_t page = 1;   // tokens a page
  int shift = -1;     // log2(page), or -1 when not a power of two
  int64_t extra = 0;  // own tokens + extra, rounded down, are the pages taken
  // The same for a folded step end's pages (Skip::fold_c), when kFold.
  int64_t fold_extra = 0;
};

// What CatchUpRequests sums over the batch.
struct CatchUpSums {
  int64_t pages = 0;        // taken for iteration `skipped`
  int64_t fold_pages = 0;   // they would have taken for the folded step end
  int64_t same = 0;         // requests whose last token came at `common`
  int64_t warm = 0;         // warm-up requests
  int64_t done_weight = 0;  // finished requests that are not warm-up
  int64_t ctx = 0;          // contexts with the next token, of those that go on
  // The least output left but one over the requests that go on (a
  // finished one's is negative: as unsigned, larger than any), and the most.
  uint64_t left = UINT64_MAX;
  int64_t most = 0;
};

// The first skipped step end's ITL entries (and first tokens), before
// CatchUpRequests moves the requests' last token: into sum->same those
// whose last token came at `common`, the rest entered one by one. The
// requests before `from` are already counted in *sum.
void FirstGaps(ReqState* const* at, const std::vector<int32_t>& run, size_t from,
               const CatchUpStep& c, LogHistogram* itl, CatchUpSums* sum) {
  const int64_t common = c.common, first_end = c.first_end;
  int64_t same = sum->same, warm = sum->warm;
  for (auto it = run.begin() + static_cast<std::ptrdiff_t>(from); it != run.end(); ++it) {
    ReqState& r = *at[*it];
    const int64_t lt = r.last_token_ns;
    if (lt == common && !r.warmup) [[likely]] {
      ++same;
      continue;
    }
    warm += r.warmup;
    if (lt < 0) {
      r.first_token_ns = first_end;             // StartAfterFirstTokens
    } else if (!r.warmup && lt != first_end) {  // not fresh (StartFromPrefill)
      itl->Add(first_end - lt);
    }
  }
  sum->same = same;
  sum->warm = warm;
}

// CatchUpRank's pass over the batch, a loop of its own so that what it
// keeps stays in registers. Pages a power of two in size (every engine's)
// are counted with a shift, known before the loop; kFold: a folded step
// end's pages are counted too.
template <bool kShift, bool kFold>
void CatchUpRequests(ReqState* const* at, const std::vector<int32_t>& run, const CatchUpStep& c,
                     std::vector<int32_t>* done, std::vector<int32_t>* growing, CatchUpSums* sum) {
  const int64_t steps = c.steps, last_ns = c.last_ns, page = c.page, extra = c.extra;
  const int64_t fold_extra = c.fold_extra;
  const int shift = c.shift;
  int64_t pages = 0, fold_pages = 0, done_weight = 0, ctx = 0, most = 0;
  uint64_t left = UINT64_MAX;
  for (const int32_t idx : run) {
    ReqState& r = *at[idx];
    r.kv_tokens += steps;
    r.generated += steps;
    r.last_token_ns = last_ns;
    // Iteration `skipped`'s pages: for its context, new token included
    // (KvPool::PagesFor).
    const int64_t own = r.kv_tokens - r.cached_tokens;
    const int64_t t = own + extra;
    const int64_t p = std::max<int64_t>(0, (kShift && t >= 0 ? t >> shift : t / page) - r.pages);
    if constexpr (kFold) {
      const int64_t tf = own + fold_extra;
      fold_pages += std::max<int64_t>(0, (kShift && tf >= 0 ? tf >> shift : tf / page) - r.pages);
    }
    r.pages += p;
    pages += p;
    const uint64_t last = static_cast<uint64_t>(r.output - r.generated - 1);
    left = std::min(left, last);
    // Only a pre-emitted step end finishes requests (applied's finishes
    // none; without either, a request finishing at iteration `skipped` is
    // one token short).
    if (static_cast<int64_t>(last) < 0) [[unlikely]] {
      done->push_back(idx);
      done_weight += !r.warmup;
      continue;
    }
    most = std::max(most, static_cast<int64_t>(last));
    ctx += r.kv_tokens + 1;
    // Scheduler::GrowPages, one token a step.
    if (own == (kShift ? r.pages << shift : r.pages * page)) [[unlikely]] {
      growing->push_back(idx);
    }
  }
  sum->pages = pages;
  sum->fold_pages = fold_pages;
  sum->done_weight = done_weight;
  sum->ctx = ctx;
  sum->left = left;
  sum->most = most;
}

// CatchUpRequests as the page size and a pending fold ask.
void CatchUpBatch(ReqState* const* at, const std::vector<int32_t>& run, const CatchUpStep& c,
                  bool fold, std::vector<int32_t>* done, std::vector<int32_t>* growing,
                  CatchUpSums* sum) {
  if (c.shift >= 0) {
    fold ? CatchUpRequests<true, true>(at, run, c, done, growing, sum)
         : CatchUpRequests<true, false>(at, run, c, done, growing, sum);
  } else {
    fold ? CatchUpRequests<false, true>(at, run, c, done, growing, sum)
         : CatchUpRequests<false, false>(at, run, c, done, growing, sum);
  }
}

}  // namespace

// One rank's requests brought up to the step end after `s.skipped` (and
// `emit` more), with their first skipped step end's ITL entries and the
// pages of iteration `skipped`; returns the rank's tokens for the peak.
int64_t ServingPool::CatchUpRank(Replica& rep, size_t k, const Skip& s, int64_t emit, int64_t pre) {
  RankState& rank = rep.ranks[k];
  if (rank.running.empty()) return rank.kv_tokens;
  ReqState* const* at = reqs_.table();
  CatchUpStep c{.steps = s.skipped + emit, .first_end = s.first_end, .last_ns = s.t + emit * s.d};
  // The gaps of the first skipped step end: most requests' last token came
  // at one step end, the digest's or the first request's, unless it is
  // fresh. The digest's requests that are not warm-up all give that gap.
  CatchUpSums sum;
  size_t from = 0;
  const int64_t lt0 = s.known > 0 ? digest_.last_ns : at[rank.running[0]]->last_token_ns;
  if (lt0 >= 0 && lt0 != c.first_end) {
    c.common = lt0;
    if (s.known > 0) {
      from = s.known;
      sum.same = s.known_weight;
      sum.warm = static_cast<int64_t>(from) - s.known_weight;
    }
  }
  c.page = rank.pool.page_size();
  c.shift = std::has_single_bit(static_cast<uint64_t>(c.page))
                ? std::countr_zero(static_cast<uint64_t>(c.page))
                : -1;
  c.extra = c.page - emit;  // PagesFor(own + 1 - emit), rounded up
  FirstGaps(at, rank.running, from, c, &res_.itl_ns, &sum);
  // A folded step end's pages: its context, new token included, from the
  // skip's start (PagesFor(own - steps + fold_c + 1), rounded up).
  const bool fold = k == 0 && s.fold_c >= 0;
  c.fold_extra = c.page + s.fold_c - c.steps;
  digest_.growing.clear();
  CatchUpBatch(at, rank.running, c, fold, &emitted_done_, &digest_.growing, &sum);
  if (fold) rank.pool.NotePeak(s.fold_base + sum.fold_pages);
  if (sum.same > 0) res_.itl_ns.Add(c.first_end - c.common, sum.same);
  const int64_t n = static_cast<int64_t>(rank.running.size());
  // The step end's tokens are out (one rank, one replica, one token a
  // step): the requests that go on are the next batch's front.
  // EndEmittedStep, which takes the finished ones out, notes them.
  digest_.valid = emit == 1 && replicas_.size() == 1 && rep.ranks.size() == 1 && !speculative_;
  digest_.retractions = rank.retractions;
  digest_.first_last = static_cast<int64_t>(sum.left);
  digest_.last_last = sum.most;
  digest_.weight = n - sum.warm - sum.done_weight;
  digest_.ctx_sum = sum.ctx;
  digest_.last_ns = c.last_ns;
  rank.pool.Allocate(sum.pages);  // SteadyIterations checked they are free
  // Folded completions brought rank 0's tokens up to their step ends.
  rank.kv_tokens += n * (c.steps - (k == 0 ? s.synced : 0));
  rep.batches[k].decode_ctx_sum += n * s.skipped;
  sched_->SkipDecodeIterations(rank, s.skipped);
  // A pre-emitted step end's peak is taken at its event, once the
  // requests it finishes have left.
  return rank.kv_tokens - n * pre;
}

size_t ServingPool::TakeDigest(const Replica& rep, int64_t* first_last, int64_t* last_last,
                               int64_t* weight) {
  const size_t n = rep.ranks.size() != 1 ? 0 : digest_.Covers(rep.ranks[0]);
  digest_.valid = false;
  if (n == 0) return 0;
  *first_last = digest_.first_last;
  *last_last = digest_.last_last;
  *weight = digest_.weight;
  return n;
}

}  // namespace capplan::sim
