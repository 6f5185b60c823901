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
};

// What CatchUpRequests sums over the batch.
struct CatchUpSums {
  int64_t pages = 0;        // taken for iteration `skipped`
  int64_t same = 0;         // requests whose last token came at `common`
  int64_t warm = 0;         // warm-up requests
  int64_t done_weight = 0;  // finished requests that are not warm-up
  // The least output left but one over the requests that go on (a
  // finished one's is negative: as unsigned, larger than any).
  uint64_t left = UINT64_MAX;
};

// CatchUpRank's pass over the batch. Pages a power of two in size (every
// engine's) are counted with a shift, known before the loop.
template <bool kShift>
CatchUpSums CatchUpRequests(ReqState* const* at, const std::vector<int32_t>& run,
                            const CatchUpStep& c, LogHistogram* itl, std::vector<int32_t>* done) {
  const int64_t steps = c.steps, first_end = c.first_end, last_ns = c.last_ns;
  const int64_t common = c.common, page = c.page, extra = c.extra;
  const int shift = c.shift;
  CatchUpSums sum;
  for (const int32_t idx : run) {
    ReqState& r = *at[idx];
    const int64_t lt = r.last_token_ns;
    if (lt == common && !r.warmup) [[likely]] {
      ++sum.same;
    } else {
      sum.warm += r.warmup;
      if (lt < 0) {
        r.first_token_ns = first_end;             // StartAfterFirstTokens
      } else if (!r.warmup && lt != first_end) {  // not fresh (StartFromPrefill)
        itl->Add(first_end - lt);
      }
    }
    r.kv_tokens += steps;
    r.generated += steps;
    r.last_token_ns = last_ns;
    // Iteration `skipped`'s pages: for its context, new token included
    // (KvPool::PagesFor).
    const int64_t t = r.kv_tokens - r.cached_tokens + extra;
    const int64_t p = std::max<int64_t>(0, (kShift && t >= 0 ? t >> shift : t / page) - r.pages);
    r.pages += p;
    sum.pages += p;
    const uint64_t last = static_cast<uint64_t>(r.output - r.generated - 1);
    // Only a pre-emitted step end finishes requests (applied's finishes
    // none; without either, a request finishing at iteration `skipped` is
    // one token short).
    if (static_cast<int64_t>(last) < 0) [[unlikely]] {
      done->push_back(idx);
      sum.done_weight += !r.warmup;
    }
    sum.left = std::min(sum.left, last);
  }
  return sum;
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
  // at one step end, the first request's unless it is fresh.
  const int64_t lt0 = at[rank.running[0]]->last_token_ns;
  if (lt0 >= 0 && lt0 != c.first_end) c.common = lt0;
  c.page = rank.pool.page_size();
  c.shift = std::has_single_bit(static_cast<uint64_t>(c.page))
                ? std::countr_zero(static_cast<uint64_t>(c.page))
                : -1;
  c.extra = 1 - emit + c.page - 1;
  const CatchUpSums sum =
      c.shift >= 0 ? CatchUpRequests<true>(at, rank.running, c, &res_.itl_ns, &emitted_done_)
                   : CatchUpRequests<false>(at, rank.running, c, &res_.itl_ns, &emitted_done_);
  if (sum.same > 0) res_.itl_ns.Add(c.first_end - c.common, sum.same);
  const int64_t n = static_cast<int64_t>(rank.running.size());
  // The step end's tokens are out (one rank, one replica): the requests
  // that go on are the next batch's front. EndEmittedStep, which takes the
  // finished ones out, notes them for TakeDigest.
  digest_.valid = emit == 1 && replicas_.size() == 1 && rep.ranks.size() == 1;
  digest_.retractions = rank.retractions;
  digest_.first_last = static_cast<int64_t>(sum.left);
  digest_.weight = n - sum.warm - sum.done_weight;
  rank.pool.Allocate(sum.pages);  // SteadyIterations checked they are free
  // Folded completions brought rank 0's tokens up to their step ends.
  rank.kv_tokens += n * (c.steps - (k == 0 ? s.synced : 0));
  rep.batches[k].decode_ctx_sum += n * s.skipped;
  sched_->SkipDecodeIterations(rank, s.skipped);
  // A pre-emitted step end's peak is taken at its event, once the
  // requests it finishes have left.
  return rank.kv_tokens - n * pre;
}

// Between the skip that took the digest and this one only the step end
// its tokens came from and a schedule ran: requests finished (they are not
// in it) and joined the batch's back (they are not either), or a
// retraction changed the batch. The requests' tokens did not change; their
// pages did, which only a fold reads.
size_t ServingPool::TakeDigest(const Replica& rep, bool fold, int64_t* first_last,
                               int64_t* weight) {
  const bool valid = digest_.valid;
  digest_.valid = false;
  const std::vector<int32_t>& ids = digest_.ids;
  if (!valid || fold || rep.ranks.size() != 1 || ids.empty()) return 0;
  const RankState& rank = rep.ranks[0];
  if (rank.retractions != digest_.retractions || rank.running.size() < ids.size() ||
      !std::equal(ids.begin(), ids.end(), rank.running.begin())) {
    return 0;
  }
  *first_last = digest_.first_last;
  *weight = digest_.weight;
  return ids.size();
}

}  // namespace capplan::sim
