// ServingPool's fast-forward (sim/serving_pool.h, header comment): skips
// whose iteration 0 is not yet steady decode. Its step end finishes prompts
// (StartFromPrefill) or gives decode requests their first tokens
// (StartAfterFirstTokens); from the next iteration on the batch is steady.
#include "sim/serving_pool.h"

namespace capplan::sim {

// Iteration 0 finishes every prompt it prefills (and holds every prompt in
// flight), the decode requests, if any, step in it too, and nothing waits:
// then from iteration 1 on the batch is steady decode. The prompts' first
// tokens are set at iteration 0's step end, and each prompt request is
// entered as if it were one token short and decoding since iteration 0, so
// that every request in the batch gains one token per step end. Their last
// token is then at iteration 0's step end, where no other request's can be
// (tokens so far came before it): that keeps them out of its ITL entries.
bool ServingPool::StartFromPrefill(Replica& rep, int64_t first_end) {
  RankState& rank = rep.ranks[0];
  RankBatch& b = rep.batches[0];
  if (!b.decode && !rank.running.empty()) return false;  // they wait a step: not in step
  if (rank.prefilling.size() != b.prefill.size() || !rank.prealloc.empty() ||
      !rank.retracted.empty()) {
    return false;
  }
  for (const auto& c : b.prefill) {
    const ReqState& r = reqs_[c.req];
    // A re-prefill after retraction emits an ITL gap, not a first token;
    // a request whose first token is its last finishes there.
    if (r.prefilled + c.tokens != r.prompt_target || r.last_token_ns >= 0 ||
        r.generated + 1 >= r.output) {
      return false;
    }
  }
  fresh_ = b.prefill;
  fresh_prefilling_.assign(rank.prefilling.begin(), rank.prefilling.end());
  for (const auto& c : b.prefill) {
    ReqState& r = reqs_[c.req];
    r.prefilled += c.tokens;
    r.kv_tokens += c.tokens - 1;
    rank.kv_tokens += c.tokens - 1;
    r.status = ReqStatus::kDecoding;
    r.first_token_ns = r.last_token_ns = first_end;
    rank.running.push_back(c.req);
    b.decode_ctx_sum += r.kv_tokens + 1;
  }
  rank.prefilling.clear();
  b.decode = true;
  b.decode_n += static_cast<int64_t>(b.prefill.size());
  b.prefill.clear();
  return true;
}

// Puts back what StartFromPrefill changed (fast-forward skipped nothing).
void ServingPool::UndoStartFromPrefill(Replica& rep) {
  RankState& rank = rep.ranks[0];
  RankBatch& b = rep.batches[0];
  for (const PrefillChunk& c : fresh_) {
    ReqState& r = reqs_[c.req];
    b.decode_ctx_sum -= r.kv_tokens + 1;
    r.prefilled -= c.tokens;
    r.kv_tokens -= c.tokens - 1;
    rank.kv_tokens -= c.tokens - 1;
    r.status = ReqStatus::kPrefilling;
    r.first_token_ns = r.last_token_ns = -1;
  }
  b.prefill = fresh_;
  rank.prefilling.assign(fresh_prefilling_.begin(), fresh_prefilling_.end());
  rank.running.resize(rank.running.size() - fresh_.size());
  b.decode_n -= static_cast<int64_t>(fresh_.size());
  b.decode = b.decode_n > 0;
  fresh_.clear();
}

// Iteration 0 is a pure decode step that gives some requests their first
// token (decode-only admissions): at its step end those set TTFT, the
// others an ITL entry each (EndSkip and FoldCompletions tell them apart by
// their missing last token), and nothing finishes (SteadyIterations).
// Iteration 1 is priced and counted as the schedule at that step end would
// form it: the same pricer calls, the same busy-time sums in the same
// order, and the same iteration counts; the skip's ranges start from it.
void ServingPool::StartAfterFirstTokens(Replica& rep, Skip* s) {
  double seconds = 0;
  const StepCost* slowest = nullptr;
  for (const RankBatch& b : rep.batches) {
    if (!b.decode) continue;
    work_.prefill.clear();
    work_.decode_n = b.decode_n;
    work_.decode_ctx_sum = b.decode_ctx_sum + b.decode_n;
    const StepCost& c = pricer_.Price(work_);
    if (slowest == nullptr || c.seconds > seconds) {
      seconds = c.seconds;
      slowest_copy_ = c;  // the next rank's Price() may reuse c's storage
      slowest = &slowest_copy_;
    }
  }
  res_.busy.Add(*slowest);
  ++res_.iterations;
  s->priced = 2;
  s->skipped = 1;
  s->cost = slowest;
  s->t = s->first_end;
  s->d = StepNs(seconds);
  s->same = SamePriceRun(rep, 1);
}

}  // namespace capplan::sim
