// ServingPool's step ends (sim/serving_pool.h): the step's tokens, the
// prompts it completes and the requests it finishes, or, when fast-forward
// already emitted its tokens, only those it finishes.
#include <algorithm>

#include "sim/serving_pool.h"

namespace capplan::sim {

void ServingPool::OnStepEnd(int rep_i) {
  Replica& rep = replicas_[rep_i];
  rep.step_end_ns = now_;
  if (rep.tokens_emitted) {  // a pure decode step whose tokens are out
    EndEmittedStep(rep);
    rep.busy = false;
    PagesFreed(rep_i);
    return;
  }
  // Its requests' tokens change, unless none decodes in it (a prefill
  // step): then the digest still holds the batch's front, and a prompt it
  // completes joins the batch behind it.
  for (const RankBatch& b : rep.batches) {
    if (b.decode) digest_.valid = false;
  }
  RequestTable& reqs = reqs_;
  int64_t kv = 0;
  for (size_t k = 0; k < rep.ranks.size(); ++k) {
    RankState& rank = rep.ranks[k];
    RankBatch& b = rep.batches[k];
    if (b.decode) EmitDecode(rank);
    for (const auto& c : b.prefill) {
      ReqState& r = reqs[c.req];
      r.prefilled += c.tokens;
      r.kv_tokens += c.tokens;
      rank.kv_tokens += c.tokens;
      if (r.prefilled < r.prompt_target) continue;
      rank.prefilling.erase(std::find(rank.prefilling.begin(), rank.prefilling.end(), c.req));
      Emit(r);
      if (!Finished(r)) {
        r.status = ReqStatus::kDecoding;
        rank.running.push_back(c.req);
      } else if (opts_.hold_kv_after_prefill) {
        Hold(r, c.req);
      } else {
        Finish(rank, r, now_);
      }
    }
    b.Clear();
    kv += rank.kv_tokens;
  }
  res_.peak_kv_tokens = std::max(res_.peak_kv_tokens, kv);
  rep.busy = false;
  PagesFreed(rep_i);
}

// Fast-forward emits a step end's tokens only in a one-rank replica
// (PreEmits; CanFoldCompletions for an applied one), so emitted_done_ lists
// requests of rank 0, in batch order: one pass takes them out of the
// batch, then each finishes (what a completion reads of the batch, its
// size for routing the next request, chooses nothing with one replica).
void ServingPool::EndEmittedStep(Replica& rep) {
  rep.tokens_emitted = false;
  RankState& rank = rep.ranks[0];
  std::vector<int32_t>& run = rank.running;
  size_t keep = 0, d = 0;
  for (const int32_t idx : run) {
    if (d < emitted_done_.size() && emitted_done_[d] == idx) {
      ++d;
    } else {
      run[keep++] = idx;
    }
  }
  run.resize(keep);
  if (digest_.valid) digest_.ids.assign(run.begin(), run.end());
  for (const int32_t idx : emitted_done_) Finish(rank, reqs_[idx], now_);
  emitted_done_.clear();
  rep.batches[0].Clear();
  res_.peak_kv_tokens = std::max(res_.peak_kv_tokens, rank.kv_tokens);
}

// The step's tokens of every running request on the rank. Most requests
// share one inter-token gap (the step's): equal entries go into the ITL
// histogram together, and the rank's token count is brought up to date
// before a completion (which reads it, routing the next request).
void ServingPool::EmitDecode(RankState& rank) {
  // Once per step for every running request: the loop keeps what it reads
  // besides the requests in registers (a completion changes none of it).
  ReqState* const* at = reqs_.table();
  int32_t* run = rank.running.data();
  const size_t n = rank.running.size();
  const int64_t now = now_;
  const bool prefill_only = cfg_.sched.phase == Phase::kPrefillOnly;
  int64_t gap = -1, gaps = 0, tokens = 0, spec_steps = 0, spec_tokens = 0;
  size_t keep = 0;
  for (size_t j = 0; j < n; ++j) {
    const int32_t idx = run[j];
    ReqState& r = *at[idx];
    const int64_t t = r.step_tokens;
    r.kv_tokens += t;
    tokens += t;
    if (speculative_) {
      ++spec_steps;
      spec_tokens += t;
    }
    if (const int64_t last = r.last_token_ns; last >= 0 && !r.warmup) {
      const int64_t v = now - last;
      if (v != gap) [[unlikely]] {
        if (gaps > 0) res_.itl_ns.Add(gap, gaps);
        gap = v;
        gaps = 0;
      }
      ++gaps;
    }
    if (r.first_token_ns < 0) r.first_token_ns = now;
    r.last_token_ns = now;
    r.generated += t;
    if (r.generated < r.output && !prefill_only) [[likely]] {
      run[keep++] = idx;
      continue;
    }
    rank.kv_tokens += tokens;
    tokens = 0;
    Finish(rank, r, now);
  }
  rank.kv_tokens += tokens;
  if (gaps > 0) res_.itl_ns.Add(gap, gaps);
  res_.spec_decode_steps += spec_steps;
  res_.spec_emitted_tokens += spec_tokens;
  rank.running.resize(keep);
}

}  // namespace capplan::sim
