// One serving pool -- replicas behind a router, each with one or more
// attention ranks (DP attention) stepping in lockstep -- as a reusable piece
// of the discrete-event core. It owns its requests' state, KV pools,
// scheduler and step prices, and handles the events an external loop pops
// from a shared EventQueue (each event names its pool). The run driver
// (sim/run_driver.h) drives a scenario's pools in one loop, a PD link
// (sim/pd_link.h) through the PD hooks below; tests drive one pool from a
// bare config (SimConfig, sim/sim_config.h).
//
// PD hooks (PoolOptions; both off for co-located runs):
//  * reserve_before_admit (decode pool): a request sent to the pool joins its
//    rank's prealloc queue. A kReserve event reserves pages for the queue's
//    head while the scheduler's Reserve rule allows (FIFO, no skipping), then
//    PoolListener::OnReserved fires. The request joins the rank's waiting
//    queue only when Deliver()ed (its KV arrived) and is admitted with the
//    pages it reserved: no prefill is computed, its first token comes from
//    its first decode iteration.
//  * hold_kv_after_prefill (prefill pool): a request whose prompt is computed
//    keeps its pages (status kHandedOff) and PoolListener::OnPromptHeld fires;
//    Release() frees them when the transfer completes, so held pages limit
//    what the prefill scheduler can admit (back-pressure).
//  * PoolListener::OnFailed: the pool gave up on a request (it can never fit
//    a rank); Abandon() tells the other pool.
//
// Requests: a request's state lives in the pool's RequestTable from when it
// is sent (or fails before it was) until it leaves, done or failed; then it
// goes to SimConfig::sink (or SimResult::requests when there is none) and
// its slot is reused from the next event on, so memory follows the
// requests in flight.
//
// Schedules: alone on its queue (no PD hooks), a pool runs a replica's
// schedule at once when no other event is queued at that instant, where the
// kSchedule event would be the next one popped; otherwise it queues the
// event. Either way the order is the queue's (sim/event_queue.h).
//
// Fast-forward (SimConfig::fast_forward): when a replica forms a pure decode
// batch and every rank's scheduler reports steady decode
// (Scheduler::SteadyDecode: opt-in per scheduler), the iterations that follow repeat with the same
// requests, each context one token longer. The pool advances K of them at
// once, K the largest count such that at each of the K skipped step ends
//  * no request finishes (K < every request's remaining output), unless
//    completions fold (below),
//  * the pages the K iterations take are already free (no retraction, no
//    prefix-cache eviction), and
//  * no event that could change this replica falls at or before that step
//    end, so nothing could have changed the batch formed there. In general
//    that is any queued event (any pool's: an arrival, another replica's
//    step end, a transfer). In a co-located pool without follow-up requests
//    and with no request waiting for a concurrency slot, only an arrival
//    can reach this replica (another replica's step end can neither send it
//    a request nor read its state), so the next arrival bounds it.
// Step prices are exact: the pricer names the context range it prices
// alike (StepPricer::SameCostUntil), so a range costs one Price() call. The
// skipped step ends emit their tokens in closed form (per request counts and
// timestamps, one weighted ITL histogram entry per price range), and the
// last iteration's step end is an ordinary event.
//
// Folded completions: in a one-rank replica of a co-located pool with
// nothing waiting (no queue, no request waiting for a concurrency slot, no
// follow-ups, no prefix cache), a step end that finishes requests would
// only take them out of the batch, the scheduler forming the same decode
// batch less them. Such a step end is skipped too when it comes before every
// queued event (so requests leave the in-flight count in time order): the
// requests finish at it, the pages the batch holds then are counted and
// theirs freed (the pool's peak is exact: the pages of the requests that go
// on are taken in the next pass over the batch, which also adds what they
// held at the fold to the peak), and the skip goes on with the smaller
// batch, up to the last request's last iteration. A client waiting
// for a concurrency slot (a closed loop's next request) does not stop that
// when the engine overlaps its schedules and the replica is its pool's only
// one: the request a folded step end sends is first seen by the schedule
// two step ends later (SchedulerEnv::visible_before_ns), so the skip folds
// it, steps once more and ends there as an ordinary event. The same replica
// may also start a skip from a batch with prompts when that step finishes
// every prompt in flight (their first tokens come at its end) and its decode
// requests step in it: from the next iteration on it is steady decode
// (StartFromPrefill). And when such a replica is its pool's only one and
// the skip's last step end follows the next arrival without finishing a
// request, fast-forward emits that step end's tokens as well: until it,
// only arrivals happen, and an arrival only queues. So it does, finishing
// requests or not, when that step end is the next event of the run (one
// pool, one replica of one rank): its event then only finishes the
// requests it lists.
//
// First tokens: a decode-only pool admits a request with its prompt
// resident, and its first decode iteration's step end sets its TTFT rather
// than an ITL entry. When that step end is the next event, no request
// finishes there and the schedule at it would run at once (no PD hooks), a
// skip may start from that iteration (StartAfterFirstTokens): the first
// tokens are set in closed form with the rest, and the next iteration is
// priced and counted as that schedule would (the same pricer calls, busy
// time sums and iteration counts), so the simulator's counters are those of
// the step end it replaces.
//
// Step ends (sim/serving_pool_step_end.cc): an ordinary one emits the
// step's tokens; one whose tokens fast-forward emitted (pre-emitted or
// applied, above; Replica::tokens_emitted) only finishes the requests it
// lists, in its replica's only rank.
//
// Results equal the iteration-by-iteration path's except for the order of
// floating-point sums of busy time.
#ifndef CAPPLAN_SIM_SERVING_POOL_H_
#define CAPPLAN_SIM_SERVING_POOL_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "common/status.h"
#include "sim/batch_digest.h"
#include "sim/event_queue.h"
#include "sim/router.h"
#include "sim/scheduler.h"
#include "sim/sim_state.h"
#include "sim/sim_config.h"
#include "sim/step_pricer.h"

namespace capplan::sim {

struct PoolOptions {
  bool reserve_before_admit = false;
  bool hold_kv_after_prefill = false;
};

class PoolListener {
 public:
  virtual ~PoolListener() = default;
  virtual void OnReserved(int pool, int32_t idx, int64_t now_ns) = 0;
  virtual void OnPromptHeld(int pool, int32_t idx, int64_t now_ns) = 0;
  virtual void OnFailed(int pool, int32_t idx, int64_t now_ns) = 0;
};

class ServingPool {
 public:
  // Validates the config (replicas, pool size, router, scheduler name).
  // `queue` and `pricer` (and `listener`, when given) outlive the pool.
  static Result<std::unique_ptr<ServingPool>> Create(uint8_t id, const SimConfig& config,
                                                     const RequestSource& requests,
                                                     StepPricer& pricer, EventQueue* queue,
                                                     PoolOptions options = {},
                                                     PoolListener* listener = nullptr);
  ServingPool(uint8_t id, const SimConfig& config, const RequestSource& requests,
              StepPricer& pricer, std::unique_ptr<Scheduler> sched, RouterFn router,
              EventQueue* queue, PoolOptions options, PoolListener* listener);

  // Client arrivals at the specs' times, in arrival order (each arrival
  // schedules the next; the concurrency cap applies).
  void StartArrivals();
  // One of this pool's events (e.pool == id).
  void Handle(const Event& e);
  // Sends request idx into the pool now: the router picks its rank.
  void Send(int32_t idx, int64_t now_ns);
  // PD decode pool: the reserved request's KV arrived; it joins the waiting
  // queue holding its reserved pages.
  void Deliver(int32_t idx, int64_t now_ns);
  // PD prefill pool: the held KV was sent; free it, the request is done here.
  void Release(int32_t idx, int64_t now_ns);
  // The request failed in the other pool: give back what it holds here
  // (reserved pages) and mark it failed; never sent here: just failed.
  void Abandon(int32_t idx, int64_t now_ns);

  // Request idx as this pool sees it now: in flight, its final state (kept
  // when the pool has no sink), or as specified when never sent here
  // (kPending). With a sink, a request that left reads as specified with
  // status kDone whether it completed or failed (its state went to the sink).
  ReqState request(int32_t idx) const;
  ReqStatus status(int32_t idx) const;
  int64_t iterations() const { return res_.iterations; }
  int64_t done() const { return done_; }
  int64_t num_requests() const { return src_.size(); }
  // Conservation check, then the result; once, after the queue drained.
  Result<SimResult> TakeResult(int64_t end_ns);

 private:
  struct Replica {
    std::vector<RankState> ranks;
    std::vector<RankBatch> batches;
    bool busy = false;
    bool schedule_pending = false;
    bool reserve_pending = false;
    // Fast-forward emitted the tokens of the step now running: its step end
    // only ends it, finishing the requests in emitted_done_.
    bool tokens_emitted = false;
    uint64_t next_rank = 0;  // round-robin cursor over ranks
    // The last step's start and end (SchedulerConfig::overlap_schedule).
    int64_t step_start_ns = -1, step_end_ns = -1;
  };

  bool OrderArrivals();
  void LinkFollowUps();
  void BuildReplicas();
  void Push(int64_t t, EventClass cls, int64_t target) { q_->Push(t, cls, target, id_); }
  // Independent request k in arrival order.
  int32_t ArrivalOrder(size_t k) const {
    return order_.empty() ? static_cast<int32_t>(k) : order_[k];
  }
  // A request's state as its spec gives it (id, arrival, lengths, warmup).
  void FromSpec(int32_t idx, ReqState* r) const;
  ReqState& OpenRequest(int32_t idx);
  // r left the pool (done or failed): to the sink, its slot freed at the
  // next event (callers up the stack may still hold r).
  void Retire(ReqState& r);
  void Reap();
  void CountInFlight(int64_t t, int64_t delta);
  void OnArrival(int32_t idx);
  static int64_t Load(const RankState& rk) { return rk.kv_tokens + rk.queued_tokens; }
  void WakeReserveAfterRetraction(int rep_i);
  static bool AnyWaiting(const Replica& rep) {
    for (const RankState& rk : rep.ranks) {
      if (!rk.waiting.empty()) return true;
    }
    return false;
  }
  int Route(int32_t idx);
  int PickRank(Replica& rep);
  static int64_t InFlight(const RankState& rk) {
    return static_cast<int64_t>(rk.waiting.size() + rk.prefilling.size() + rk.running.size() +
                                rk.prealloc.size() + rk.retracted.size());
  }
  void WakeUp(int rep_i);
  void RunDueSchedules();
  void WakeReserve(int rep_i);
  void PagesFreed(int rep_i);
  void OnReserve(int rep_i);
  void OnSchedule(int rep_i);
  void Trace(int rep_i, int64_t dur, int64_t decode_n, int64_t prefill_tokens);
  void Emit(ReqState& r, int64_t tokens = 1);
  bool Finished(const ReqState& r) const {
    return r.generated >= r.output || cfg_.sched.phase == Phase::kPrefillOnly;
  }
  // r completed at t (now, or a step end fast-forward folded).
  void Finish(RankState& rank, ReqState& r, int64_t t);
  void Hold(ReqState& r, int32_t idx);
  void IssueNext(int64_t t);
  void IssueFollowUps(int32_t idx, int64_t t);
  void HandleFailures();
  void OnStepEnd(int rep_i);
  // The step end whose tokens fast-forward emitted (Replica::tokens_emitted):
  // it only finishes the requests in emitted_done_.
  void EndEmittedStep(Replica& rep);
  void EmitDecode(RankState& rank);
  // After OnSchedule formed a batch lasting `dur_ns` (pure decode, or one
  // that finishes its prompts): skips the steady iterations that follow
  // (header comment) and returns the end time of the iteration whose step
  // end is then pushed.
  int64_t FastForward(int rep_i, int64_t dur_ns);
  // No prefix cache, or one that keeps only requests' own blocks.
  bool NoSharedCache() const;
  // Whether fast-forward may fold completions in this replica (header
  // comment).
  bool CanFoldCompletions(const Replica& rep) const;
  // Whether the skip's last step end, at t, may have its tokens emitted
  // with the skip's (EndSkip).
  bool PreEmits(const Replica& rep, int64_t t) const;
  bool StartFromPrefill(Replica& rep, int64_t first_end);
  void UndoStartFromPrefill(Replica& rep);
  struct RangeSlot;
  // One fast-forward: its bounds, where it stands (iteration `skipped`
  // starts at t, lasts d and costs `cost`, like the `same` - 1 after it),
  // and its folded completions.
  struct Skip {
    bool fold = false;     // CanFoldCompletions
    bool prefill = false;  // iteration 0 has prompts (StartFromPrefill)
    // Iteration 0 may give (SteadyIterations: gives) first tokens
    // (StartAfterFirstTokens).
    bool first_tokens = false;
    // The first iterations, counted as schedules priced them: iteration 0
    // (OnSchedule), and iteration 1 too after first tokens.
    int64_t priced = 1;
    int64_t first_end = 0;  // iteration 0's step end
    int64_t limit = 0;      // SteadyIterations
    int64_t horizon = 0, fold_horizon = 0;
    int64_t itl_weight = 0;   // requests whose tokens enter the ITL histogram
    int64_t synced = 0;       // step ends whose tokens rank 0 already counts
    size_t next = 0;          // the next entry of ends_
    int64_t end = INT64_MAX;  // its iteration, or none
    int64_t skipped = 0, t = 0, d = 0, same = 0;
    const StepCost* cost = nullptr;
    RangeSlot* slot = nullptr;  // cost's, when it has one
    // Requests at the batch's front the digest held (TakeDigest): their
    // last token came at the digest's last_ns; known_weight of them are
    // not warm-up. A fold that finishes one of them takes it out of both.
    size_t known = 0;
    int64_t known_weight = 0;
    // A folded step end whose pool peak is not yet taken (-1: none): the
    // requests going on past it take their pages to it in the next pass
    // over the batch (another fold's, or CatchUpRank's), which adds them
    // to fold_base, the pages the pool held there without them.
    int64_t fold_c = -1;
    int64_t fold_base = 0;
  };
  int64_t NextEnd(const Skip& s) const {
    return s.next < ends_.size() ? ends_[s.next].first : INT64_MAX;
  }
  // K (header comment), and the requests whose tokens enter the ITL
  // histogram at each skipped step end (s->itl_weight). With s->fold, step
  // ends that finish requests count too, up to the last request's last
  // iteration; with s->first_tokens, iteration 0 may give first tokens
  // (then it says whether it does).
  int64_t SteadyIterations(const Replica& rep, Skip* s);
  // How many requests at the front of the batch digest_ holds (0 when it
  // holds none of this batch's), and their sums into *first_last,
  // *last_last and *weight; digest_ is spent.
  size_t TakeDigest(const Replica& rep, int64_t* first_last, int64_t* last_last,
                    int64_t* weight);
  int64_t PagedLimit(const Replica& rep, int64_t limit) const;
  void StartAfterFirstTokens(Replica& rep, Skip* s);
  bool BeginSkip(Replica& rep, int64_t dur_ns, Skip* s);
  void SkipRanges(Replica& rep, Skip* s);
  void EndSkip(Replica& rep, Skip* s);
  int64_t CatchUpRank(Replica& rep, size_t k, const Skip& s, int64_t emit, int64_t pre);
  // Folds the step end of iteration `c` (ending at t), which finishes the
  // requests ends_[f->next...] names at c: brings the rank's pages and
  // tokens up to that step end, then finishes them and takes them out of
  // the batch.
  void FoldCompletions(Replica& rep, int64_t c, int64_t t, Skip* f);
  void FoldPages(RankState& rank, int64_t c, Skip* f);
  // A co-located pool without follow-ups or a concurrency backlog: only an
  // arrival can reach a replica (header comment).
  bool OnlyArrivalsReach() const;
  // Folded completions may send waiting clients' requests (header comment).
  bool FoldSendsUnseen() const;
  // The time before which nothing can change a steady replica (above).
  int64_t Horizon() const;
  int64_t SamePriceRun(const Replica& rep, int64_t i);
  int64_t RankSamePriceRun(const RankBatch& b, int64_t i, int64_t* until);
  // Iterations of n decode requests from context sum ctx up to `until`.
  static int64_t RunLength(int64_t until, int64_t ctx, int64_t n) { return (until - ctx) / n + 1; }
  const StepCost* PriceSteadyStep(const Replica& rep, int64_t i, int64_t* dur_ns, int64_t* same,
                                  RangeSlot** slot);
  const StepCost* PriceRanks(const Replica& rep, int64_t i, int64_t* dur_ns, int64_t* same);
  void FillRangeSlot(RangeSlot& s, int64_t n, int64_t ctx, int64_t until);
  void AddBusy(const StepCost& cost, RangeSlot* slot, int64_t times);
  void FlushBusy(RangeSlot& s);
  // Nanoseconds rounded half up, at least 1: for 0.5 <= x < 2^52 the
  // rounded sum x + 0.5 never reaches the next integer early, so truncating
  // it gives std::llround(x); below 0.5 both give at most the floor of 1.
  // It saves a libm call per price range on the fast path.
  static int64_t StepNs(double seconds) {
    return std::max<int64_t>(1, static_cast<int64_t>(seconds * 1e9 + 0.5));
  }
  void TransferPages(int64_t delta);
  Status CheckConservation();

  uint8_t id_;
  SimConfig cfg_;
  bool speculative_ = false;  // cfg_.sched.speculative is on
  StepPricer& pricer_;
  std::unique_ptr<Scheduler> sched_;
  EventQueue* q_;
  PoolOptions opts_;
  PoolListener* listener_;
  SimResult res_;
  const RequestSource& src_;
  RequestTable reqs_;
  std::vector<int32_t> reap_;  // retired, slots not yet freed
  bool direct_schedule_ = false;
  std::vector<int> due_;  // replicas whose schedule WakeUp deferred
  int64_t retired_ = 0;
  // In flight for SimResult::max_concurrent_requests: the count, and the
  // time of its last change (a peak counts once its instant is over).
  int64_t conc_ = 0, conc_t_ = -1;
  // Independent requests, by arrival time; empty when that is every request
  // in index order (the usual trace), which then needs no table.
  std::vector<int32_t> order_;
  size_t independent_ = 0;
  // Follow-ups (the next turns of conversations), one entry per request
  // (empty when the workload has none): `first` is the first request issued
  // `think_ns` after this one completes or fails, `next` the next one after
  // the same request; -1 ends a list.
  struct FollowUp {
    int32_t first = -1;
    int32_t next = -1;
    int64_t think_ns = 0;
    bool is_follow_up = false;  // issued by a predecessor, not by arrival time
  };
  std::vector<FollowUp> follow_;
  std::vector<std::unique_ptr<prefix_cache::PrefixCache>> caches_;  // one per rank, when on
  std::vector<int64_t> blocks_;  // content ids scratch (SchedulerEnv::blocks)
  // cache_aware routing: each replica's approximate tree of the prompts
  // routed to it (like SGLang's router, which sees requests, not caches).
  std::vector<std::unique_ptr<prefix_cache::PrefixCache>> route_trees_;
  std::vector<int64_t> route_blocks_;
  size_t cursor_ = 0;
  int64_t next_arrival_ns_ = INT64_MAX;  // the queued chained arrival, if any
  int64_t in_flight_ = 0;
  std::deque<int32_t> backlog_;
  std::vector<Replica> replicas_;
  int64_t now_ = 0;
  int64_t admit_counter_ = 0;
  int64_t done_ = 0;
  RouterFn router_ = nullptr;
  uint64_t next_replica_ = 0;
  int64_t transfer_pages_ = 0;  // reserved before the KV arrived, or held for sending
  std::vector<int32_t> failed_;
  std::vector<int32_t> reserved_;  // scratch: requests a reserve event reserved
  SchedulerEnv env_;
  StepWork work_;
  StepCost slowest_copy_;
  // The price OnSchedule gave the step it started (slowest_copy_, or the
  // pricer's own entry with one rank), which a fast-forward starts from.
  const StepCost* step_cost_ = nullptr;
  StepCost load_copy_;  // WithKvLoad's
  const StepCost* WithKvLoad(RankState& rank, const RankBatch& batch, const StepCost& priced);
  // Fast-forward from iteration 0 with prompts (StartFromPrefill): its
  // chunks, and the rank's prefilling queue before it.
  std::vector<PrefillChunk> fresh_;
  std::vector<int32_t> fresh_prefilling_;
  // The requests a step end whose tokens fast-forward emitted finishes, in
  // batch order.
  std::vector<int32_t> emitted_done_;
  // Fast-forward's folded completions: (last iteration, request), in order.
  std::vector<std::pair<int64_t, int32_t>> ends_;
  // The batch a skip whose last step end it emitted leaves, for the next
  // schedule and skip (sim/batch_digest.h).
  BatchDigest digest_;
  // One-rank steady prices by range, direct-mapped: a range is keyed by its
  // batch size and the last context sum it covers (StepPricer::SameCostUntil
  // names it), and Price() is a function of the step.
  struct RangeSlot {
    int64_t decode_n = -1;
    int64_t until = -1;
    int64_t dur_ns = 0;
    int64_t iterations = 0;   // at this price, not yet in the busy time
    int64_t next_until = -1;  // the next range's last context sum
    int itl_bucket = 0;       // LogHistogram::BucketOf(dur_ns)
    StepCost cost;
  };
  // 4,096 slots (~590 KB): with 1,024 the 100k Llama trace benchmark runs
  // 4% more instructions (callgrind), the extra misses re-pricing ranges.
  static constexpr int kRangeSlotBits = 12;
  std::vector<RangeSlot> range_slots_ = std::vector<RangeSlot>(size_t{1} << kRangeSlotBits);
};

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_SERVING_POOL_H_
