#include "sim/serving_pool.h"

#include <algorithm>
#include <cmath>

#include "sim/rank_cache.h"

namespace capplan::sim {

Result<std::unique_ptr<ServingPool>> ServingPool::Create(uint8_t id, const SimConfig& config,
                                                         const RequestSource& specs,
                                                         StepPricer& pricer, EventQueue* queue,
                                                         PoolOptions options,
                                                         PoolListener* listener) {
  if (config.replicas < 1 || config.ranks_per_replica < 1) {
    return Status::Invalid("simulator: replicas and attention ranks must be >= 1");
  }
  if (config.page_size < 1 || config.kv_tokens_per_rank < config.page_size) {
    return Status::Invalid("simulator: the KV pool holds " +
                           std::to_string(config.kv_tokens_per_rank) +
                           " tokens per attention rank, less than one page of " +
                           std::to_string(config.page_size) +
                           "; free memory (mem_fraction_static, weights, tp)");
  }
  if (config.sched.chunked_prefill_tokens < 1) {
    return Status::Invalid("simulator: chunked_prefill_tokens must be >= 1, got " +
                           std::to_string(config.sched.chunked_prefill_tokens));
  }
  for (int32_t i = 0; i < specs.size(); ++i) {
    const SimRequestSpec s = specs.At(i);
    if (s.after < -1 || s.after >= specs.size()) {
      return Status::Invalid("simulator: request " + std::to_string(s.id) +
                             " follows a request that does not exist");
    }
  }
  if (config.prefix_cache &&
      (config.prefix_block_tokens < 1 || config.prefix_block_tokens % config.page_size != 0)) {
    return Status::Invalid(
        "simulator: prefix-cache blocks of " + std::to_string(config.prefix_block_tokens) +
        " tokens must be a positive multiple of page_size " + std::to_string(config.page_size) +
        " (set the workload's block_tokens or the deployment's page_size)");
  }
  if (!SchedulingFilled(config.sched)) {
    return Status::Internal(
        "simulator: the scheduler's admission ratios and retraction knobs are unset "
        "(FillSglangDefaults fills them where the deployment is resolved)");
  }
  CAPPLAN_ASSIGN_OR_RETURN(RouterFn router, Routers().Find(config.router));
  CAPPLAN_ASSIGN_OR_RETURN(SchedulerFactory f, Schedulers().Find(config.scheduler));
  SchedulerConfig sched = config.sched;
  sched.retract_to_host = options.reserve_before_admit;
  return std::make_unique<ServingPool>(id, config, specs, pricer, f(sched), router, queue,
                                       options, listener);
}

ServingPool::ServingPool(uint8_t id, const SimConfig& c, const RequestSource& specs,
                         StepPricer& pricer, std::unique_ptr<Scheduler> sched, RouterFn router,
                         EventQueue* queue, PoolOptions options, PoolListener* listener)
    : id_(id),
      cfg_(c),
      speculative_(!c.sched.speculative.p.empty()),
      pricer_(pricer),
      sched_(std::move(sched)),
      q_(queue),
      opts_(options),
      listener_(listener),
      src_(specs),
      reqs_(specs.size()),
      router_(router) {
  if (cfg_.sink == nullptr) res_.requests.resize(static_cast<size_t>(specs.size()));
  const bool follow_ups = OrderArrivals();
  // A PD prefill pool never issues turns: the decode pool, where a request
  // enters and leaves, does.
  if (follow_ups && !options.hold_kv_after_prefill) LinkFollowUps();
  BuildReplicas();
  env_.reqs = &reqs_;
  // Alone on its queue (no PD listener), the pool knows every event that
  // can fall at the current instant, so a schedule may run without a trip
  // through the queue (RunDueSchedules).
  direct_schedule_ =
      listener == nullptr && !options.reserve_before_admit && !options.hold_kv_after_prefill;
  env_.admit_counter = &admit_counter_;
  env_.failed = &failed_;
  env_.digest = &digest_;
}

// Workloads come in arrival order (traces are sorted when read) and mostly
// without follow-ups: then the arrival order is the index order and needs
// no table. Returns whether any request follows another.
bool ServingPool::OrderArrivals() {
  const int32_t n = static_cast<int32_t>(src_.size());
  bool follow_ups = false, sorted = true;
  int64_t last = INT64_MIN;
  for (int32_t i = 0; i < n; ++i) {
    const SimRequestSpec sp = src_.At(i);
    if (sp.after >= 0) {
      follow_ups = true;
      continue;
    }
    ++independent_;
    sorted = sorted && sp.arrival_ns >= last;
    last = sp.arrival_ns;
  }
  if (follow_ups || !sorted) {
    std::vector<int64_t> arrival(static_cast<size_t>(n));
    order_.reserve(independent_);
    for (int32_t i = 0; i < n; ++i) {
      const SimRequestSpec sp = src_.At(i);
      arrival[static_cast<size_t>(i)] = sp.arrival_ns;
      if (sp.after < 0) order_.push_back(i);
    }
    std::stable_sort(order_.begin(), order_.end(),
                     [&](int32_t a, int32_t b) { return arrival[a] < arrival[b]; });
  }
  return follow_ups;
}

// Built back to front so each list keeps spec order (the tie-break between
// two follow-ups of one request due at the same instant).
void ServingPool::LinkFollowUps() {
  const int32_t n = static_cast<int32_t>(src_.size());
  follow_.assign(static_cast<size_t>(n), FollowUp());
  for (int32_t i = n; i-- > 0;) {
    const SimRequestSpec sp = src_.At(i);
    if (sp.after < 0) continue;
    FollowUp& a = follow_[static_cast<size_t>(sp.after)];
    follow_[i].next = a.first;
    a.first = i;
    follow_[i].think_ns = sp.think_ns;
    follow_[i].is_follow_up = true;
  }
}

// Replicas and ranks with their KV pools, the scheduler's rank state, the
// routers' prompt trees and the ranks' prefix caches.
void ServingPool::BuildReplicas() {
  const SimConfig& c = cfg_;
  replicas_.resize(c.replicas);
  for (auto& rep : replicas_) {
    rep.ranks.resize(c.ranks_per_replica);
    rep.batches.resize(c.ranks_per_replica);
    for (auto& rk : rep.ranks) {
      rk.pool = KvPool(c.kv_tokens_per_rank, c.page_size);
      sched_->InitRank(rk);
    }
  }
  res_.kv_capacity_tokens_per_replica =
      replicas_.empty() ? 0 : replicas_[0].ranks[0].pool.capacity_tokens() * c.ranks_per_replica;
  if (RouterUsesPrefixTrees(c.router) && c.content && c.prefix_block_tokens > 0 &&
      !c.prefix_self_only) {
    for (size_t i = 0; i < replicas_.size(); ++i) {
      route_trees_.push_back(std::make_unique<prefix_cache::PrefixCache>(c.prefix_block_tokens, 1));
    }
  }
  if (c.prefix_cache && c.content && c.sched.phase != Phase::kDecodeOnly) {
    for (auto& rep : replicas_) {
      for (auto& rk : rep.ranks) {
        caches_.push_back(
            std::make_unique<prefix_cache::PrefixCache>(c.prefix_block_tokens, c.page_size));
        rk.cache = caches_.back().get();
        if (c.host_tier.blocks_per_rank > 0) {
          rk.cache->EnableHostTier(c.host_tier.blocks_per_rank, c.host_tier.policy);
          rk.host_load_min_tokens = c.host_tier.load_min_tokens;
        }
      }
    }
    env_.content = &cfg_.content;
    env_.content_self_only = c.prefix_self_only;
    env_.blocks = &blocks_;
  }
}

void ServingPool::StartArrivals() {
  if (cursor_ < independent_) {
    const int32_t first = ArrivalOrder(cursor_++);
    next_arrival_ns_ = src_.At(first).arrival_ns;
    Push(next_arrival_ns_, EventClass::kArrival, first);
  }
}

void ServingPool::FromSpec(int32_t idx, ReqState* r) const {
  const SimRequestSpec sp = src_.At(idx);
  r->idx = idx;
  r->id = sp.id;
  r->arrival_ns = sp.arrival_ns;
  r->input = sp.input_tokens;
  r->output = std::max<int64_t>(sp.output_tokens, 1);
  r->warmup = sp.warmup;
}

ReqState& ServingPool::OpenRequest(int32_t idx) {
  ReqState& r = reqs_.Open(idx);
  FromSpec(idx, &r);
  res_.max_request_slots = std::max(res_.max_request_slots, reqs_.slots());
  return r;
}

void ServingPool::Retire(ReqState& r) {
  if (cfg_.sink != nullptr) {
    cfg_.sink->OnRetired(r);
  } else {
    res_.requests[static_cast<size_t>(r.idx)] = r;
  }
  CountInFlight(r.finish_ns, -1);
  reap_.push_back(r.idx);
  ++retired_;
}

void ServingPool::Reap() {
  for (int32_t idx : reap_) reqs_.Close(idx);
  reap_.clear();
}

// Times come in order (the event loop's), so the count at the end of each
// instant is a candidate peak: within an instant finishes count first.
void ServingPool::CountInFlight(int64_t t, int64_t delta) {
  if (t != conc_t_) {
    res_.max_concurrent_requests = std::max(res_.max_concurrent_requests, conc_);
    conc_t_ = t;
  }
  conc_ += delta;
}

ReqState ServingPool::request(int32_t idx) const {
  if (reqs_.open(idx)) return reqs_[idx];
  if (reqs_.closed(idx) && !res_.requests.empty()) return res_.requests[static_cast<size_t>(idx)];
  ReqState r;
  FromSpec(idx, &r);
  if (reqs_.closed(idx)) r.status = ReqStatus::kDone;  // left; its state went to the sink
  return r;
}

ReqStatus ServingPool::status(int32_t idx) const {
  if (reqs_.open(idx)) return reqs_[idx].status;
  if (!reqs_.closed(idx)) return ReqStatus::kPending;
  return res_.requests.empty() ? ReqStatus::kDone : res_.requests[static_cast<size_t>(idx)].status;
}

void ServingPool::Handle(const Event& e) {
  Reap();
  now_ = e.time_ns;
  switch (e.cls) {
    case EventClass::kStepEnd: OnStepEnd(static_cast<int>(e.target)); break;
    case EventClass::kArrival: OnArrival(static_cast<int32_t>(e.target)); break;
    case EventClass::kReserve: OnReserve(static_cast<int>(e.target)); break;
    case EventClass::kSchedule: OnSchedule(static_cast<int>(e.target)); break;
    case EventClass::kTransferDone: break;  // the PD driver's, never a pool's
  }
  if (!due_.empty()) RunDueSchedules();
}

// A request reaches the client: sent now when a concurrency slot is free,
// else it waits for one (FIFO).
void ServingPool::OnArrival(int32_t idx) {
  // A follow-up's arrival was pushed by its predecessor; only independent
  // arrivals chain to the next one in arrival order.
  const bool follow_up = !follow_.empty() && follow_[idx].is_follow_up;
  if (!follow_up) {
    next_arrival_ns_ = INT64_MAX;
    if (cursor_ < independent_) {
      const int32_t next = ArrivalOrder(cursor_++);
      next_arrival_ns_ = std::max(now_, src_.At(next).arrival_ns);
      Push(next_arrival_ns_, EventClass::kArrival, next);
    }
  }
  if (cfg_.concurrency > 0 && in_flight_ >= cfg_.concurrency) {
    backlog_.push_back(idx);
    return;
  }
  Send(idx, now_);
}

void ServingPool::Send(int32_t idx, int64_t now_ns) {
  now_ = now_ns;
  ReqState& r = OpenRequest(idx);
  r.arrival_ns = now_;
  CountInFlight(now_, +1);
  ++in_flight_;
  const int rep_i = Route(idx);
  Replica& rep = replicas_[rep_i];
  const int rank_i = PickRank(rep);
  RankState& rank = rep.ranks[rank_i];
  r.instance = rep_i;
  r.rank = rank_i;
  r.prompt_target = r.input;
  rank.queued_tokens += r.input;
  if (opts_.reserve_before_admit) {
    r.status = ReqStatus::kWaiting;
    rank.prealloc.push_back(idx);
    WakeReserve(rep_i);
    return;
  }
  r.status = ReqStatus::kWaiting;
  rank.waiting.push_back(idx);
  WakeUp(rep_i);
}

void ServingPool::Deliver(int32_t idx, int64_t now_ns) {
  now_ = now_ns;
  ReqState& r = reqs_[idx];
  TransferPages(-r.pages);
  r.status = ReqStatus::kWaiting;
  replicas_[r.instance].ranks[r.rank].waiting.push_back(idx);
  WakeUp(r.instance);
}

void ServingPool::Release(int32_t idx, int64_t now_ns) {
  now_ = now_ns;
  ReqState& r = reqs_[idx];
  const int rep_i = r.instance;
  TransferPages(-r.pages);
  Finish(replicas_[rep_i].ranks[r.rank], r, now_);
  PagesFreed(rep_i);
}

void ServingPool::Abandon(int32_t idx, int64_t now_ns) {
  now_ = now_ns;
  if (!reqs_.open(idx)) {  // never sent here
    ReqState& r = OpenRequest(idx);
    r.status = ReqStatus::kFailed;
    r.finish_ns = now_;
    IssueFollowUps(idx, now_);
    // In and out at once: never in flight.
    CountInFlight(now_, +1);
    Retire(r);
    return;
  }
  ReqState& r = reqs_[idx];
  // Reserved decode pages for a prompt the prefill pool could not take.
  RankState& rank = replicas_[r.instance].ranks[r.rank];
  TransferPages(-r.pages);
  sched_->CancelReservation(rank, r);
  rank.queued_tokens -= r.prompt_target;
  r.status = ReqStatus::kFailed;
  r.finish_ns = now_;
  const int rep_i = r.instance;
  Retire(r);
  ++done_;
  IssueNext(now_);
  IssueFollowUps(idx, now_);  // a conversation goes on after a failed turn
  PagesFreed(rep_i);
}

int ServingPool::Route(int32_t idx) {
  RouteQuery q;
  q.n = static_cast<int>(replicas_.size());
  q.kv_load = [&](int i) {
    int64_t load = 0;
    for (const auto& rk : replicas_[i].ranks) load += Load(rk);
    return load;
  };
  q.in_flight = [&](int i) {
    int64_t n = 0;
    for (const auto& rk : replicas_[i].ranks) n += InFlight(rk);
    return n;
  };
  q.cursor = &next_replica_;
  if (!route_trees_.empty()) {
    cfg_.content(idx, reqs_[idx].input / cfg_.prefix_block_tokens, &route_blocks_);
    q.prompt_blocks = static_cast<int64_t>(route_blocks_.size());
    q.matched_blocks = [&](int i) { return route_trees_[i]->MatchLength(route_blocks_); };
    q.tree_blocks = [&](int i) { return route_trees_[i]->cached_blocks(); };
  }
  const int pick = router_(q);
  if (!route_trees_.empty()) route_trees_[pick]->Insert(route_blocks_, q.prompt_blocks);
  return pick;
}

// DP-attention ranks of one replica: the same router, looking at the ranks'
// own prefix caches when there are any.
int ServingPool::PickRank(Replica& rep) {
  if (rep.ranks.size() == 1) return 0;
  RouteQuery q;
  q.n = static_cast<int>(rep.ranks.size());
  q.kv_load = [&](int i) { return Load(rep.ranks[i]); };
  q.in_flight = [&](int i) { return InFlight(rep.ranks[i]); };
  q.cursor = &rep.next_rank;
  if (!route_trees_.empty() && rep.ranks[0].cache != nullptr) {
    q.prompt_blocks = static_cast<int64_t>(route_blocks_.size());
    q.matched_blocks = [&](int i) { return rep.ranks[i].cache->MatchLength(route_blocks_); };
    q.tree_blocks = [&](int i) { return rep.ranks[i].cache->cached_blocks(); };
  }
  return router_(q);
}

void ServingPool::WakeUp(int rep_i) {
  Replica& rep = replicas_[rep_i];
  if (rep.busy || rep.schedule_pending) return;
  rep.schedule_pending = true;
  if (direct_schedule_) {
    due_.push_back(rep_i);
  } else {
    Push(now_, EventClass::kSchedule, rep_i);
  }
}

// The schedules WakeUp deferred, in the order they were asked for. While no
// other event is queued at this instant, the kSchedule event would be the
// next one popped, so it runs now; once one is, the rest are queued behind
// it as events, in the same order.
void ServingPool::RunDueSchedules() {
  for (size_t i = 0; i < due_.size(); ++i) {
    if (q_->next_time() <= now_) {
      for (; i < due_.size(); ++i) Push(now_, EventClass::kSchedule, due_[i]);
      break;
    }
    OnSchedule(due_[i]);  // may wake more replicas: appended to due_
  }
  due_.clear();
}

void ServingPool::WakeReserve(int rep_i) {
  Replica& rep = replicas_[rep_i];
  if (rep.reserve_pending) return;
  rep.reserve_pending = true;
  Push(now_, EventClass::kReserve, rep_i);
}

// Pages came back: the scheduler may admit more and, in a PD decode pool, a
// prealloc queue may reserve.
void ServingPool::PagesFreed(int rep_i) {
  WakeUp(rep_i);
  if (!opts_.reserve_before_admit) return;
  for (const auto& rk : replicas_[rep_i].ranks) {
    if (!rk.prealloc.empty() || !rk.retracted.empty()) {
      WakeReserve(rep_i);
      return;
    }
  }
}

void ServingPool::OnReserve(int rep_i) {
  Replica& rep = replicas_[rep_i];
  rep.reserve_pending = false;
  env_.now_ns = now_;
  for (RankState& rank : rep.ranks) {
    reserved_.clear();
    if (sched_->ReserveQueued(rank, env_, &reserved_)) WakeUp(rep_i);
    for (int32_t idx : reserved_) {
      TransferPages(reqs_[idx].pages);
      if (listener_ != nullptr) listener_->OnReserved(id_, idx, now_);
    }
  }
  HandleFailures();
}

// A retraction freed pages; if it emptied the batch no step end follows to
// say so, and the retracted queue must not wait for one.
void ServingPool::WakeReserveAfterRetraction(int rep_i) {
  if (!opts_.reserve_before_admit) return;
  for (const auto& rk : replicas_[rep_i].ranks) {
    if (!rk.retracted.empty()) {
      WakeReserve(rep_i);
      return;
    }
  }
}

void ServingPool::OnSchedule(int rep_i) {
  Replica& rep = replicas_[rep_i];
  rep.schedule_pending = false;
  if (rep.busy) return;
  env_.now_ns = now_;
  // Right after a step, an overlapping engine runs the batch it formed when
  // that step began; an idle one sees every request that has arrived.
  env_.visible_before_ns =
      cfg_.sched.overlap_schedule && rep.step_end_ns == now_ ? rep.step_start_ns : INT64_MAX;
  double seconds = 0;
  const StepCost* slowest = nullptr;
  int64_t admitted = 0, decode_n = 0, prefill_tokens = 0;
  bool any = false;
  for (size_t k = 0; k < rep.ranks.size(); ++k) {
    RankBatch& b = rep.batches[k];
    b.Clear();
    sched_->FormBatch(rep.ranks[k], env_, &b);
    admitted += static_cast<int64_t>(rep.ranks[k].running.size() + rep.ranks[k].prefilling.size());
    if (b.empty()) continue;
    any = true;
    work_.prefill.clear();
    for (const auto& c : b.prefill) {
      work_.prefill.push_back({c.tokens, c.cached});
      prefill_tokens += c.tokens;
    }
    work_.decode_n = b.decode_n;
    work_.decode_ctx_sum = b.decode_ctx_sum;
    decode_n += b.decode_n;
    const StepCost* c = &pricer_.Price(work_);
    if (rep.ranks[k].loading_blocks > 0) c = WithKvLoad(rep.ranks[k], b, *c);
    // DP-attention ranks step in lockstep: the slowest sets the pace. With
    // one rank no other Price() call comes before the step's price is
    // read (here and by FastForward), so it is read where the pricer keeps
    // it; with several, the next rank's call may reuse that storage.
    if (slowest == nullptr || c->seconds > seconds) {
      seconds = c->seconds;
      if (rep.ranks.size() == 1) {
        slowest = c;
      } else {
        slowest_copy_ = *c;
        slowest = &slowest_copy_;
      }
    }
  }
  step_cost_ = slowest;
  res_.max_running_requests = std::max(res_.max_running_requests, admitted);
  HandleFailures();
  WakeReserveAfterRetraction(rep_i);
  if (!any) {
    // Nothing formed while requests wait unseen: the engine's loop finds
    // its queue again at once.
    if (env_.visible_before_ns != INT64_MAX && AnyWaiting(rep)) {
      rep.step_end_ns = -1;
      OnSchedule(rep_i);
    }
    return;
  }
  rep.busy = true;
  rep.step_start_ns = now_;
  const int64_t dur = StepNs(seconds);
  res_.busy.Add(*slowest);
  ++res_.iterations;
  if (cfg_.want_trace) Trace(rep_i, dur, decode_n, prefill_tokens);
  const bool ff = cfg_.fast_forward && !cfg_.want_trace;
  Push(ff ? FastForward(rep_i, dur) : now_ + dur, EventClass::kStepEnd, rep_i);
}

// The rank's step waits for the blocks its admissions load back: the load
// alone, or, when the forward overlaps it layer by layer, the part of it
// the step's own time does not cover. That wait is each loading request's
// share of its TTFT spent on loads.
const StepCost* ServingPool::WithKvLoad(RankState& rank, const RankBatch& batch,
                                        const StepCost& priced) {
  const SimConfig::HostTier& h = cfg_.host_tier;
  const double load_s =
      static_cast<double>(rank.loading_blocks) * h.bytes_per_block / h.load_bytes_per_s;
  rank.loading_blocks = 0;
  const double stall = h.layerwise_overlap ? std::max(0.0, load_s - priced.seconds) : load_s;
  for (const PrefillChunk& c : batch.prefill) {
    ReqState& r = reqs_[c.req];
    if (!r.loading_kv) continue;
    r.kv_load_ns += StepNs(stall);
    r.loading_kv = false;
  }
  load_copy_ = priced;
  load_copy_.seconds += stall;
  load_copy_.kv_load_seconds += stall;
  load_copy_.class_seconds[static_cast<int>(models::OpClass::kCommunication)] += stall;
  load_copy_.bound_seconds[static_cast<int>(Bound::kCommunication)] += stall;
  load_copy_.provenance_seconds[static_cast<int>(OpProvenance::kCollective)] += stall;
  return &load_copy_;
}

void ServingPool::Trace(int rep_i, int64_t dur, int64_t decode_n, int64_t prefill_tokens) {
  if (res_.iterations > cfg_.trace_max_iterations) {
    res_.trace_truncated = true;
    return;
  }
  const char* name = prefill_tokens > 0 ? (decode_n > 0 ? "mixed" : "prefill") : "decode";
  res_.trace_events.push_back({{"name", name},
                               {"cat", "iteration"},
                               {"ph", "X"},
                               {"ts", now_ / 1000.0},
                               {"dur", dur / 1000.0},
                               {"pid", rep_i},
                               {"tid", 0},
                               {"args", {{"decode_requests", decode_n}, {"prefill_tokens", prefill_tokens}}}});
  int64_t kv = 0, waiting = 0;
  for (const auto& rk : replicas_[rep_i].ranks) {
    kv += rk.kv_tokens;
    waiting += static_cast<int64_t>(rk.waiting.size());
  }
  res_.trace_events.push_back({{"name", "kv_tokens"}, {"ph", "C"}, {"ts", now_ / 1000.0},
                               {"pid", rep_i}, {"args", {{"kv_tokens", kv}}}});
  res_.trace_events.push_back({{"name", "queue"}, {"ph", "C"}, {"ts", now_ / 1000.0},
                               {"pid", rep_i}, {"args", {{"waiting_requests", waiting}}}});
  if (caches_.empty() || cfg_.prefix_self_only) return;
  // Prefix cache: what it holds and the prompt tokens it has served so far
  // (a rising hit line is cache hits; a falling cached line is eviction).
  int64_t cached = 0, hits = 0;
  for (const auto& rk : replicas_[rep_i].ranks) {
    cached += rk.cache->cached_blocks() * rk.cache->block_tokens();
    hits += rk.cache_hit_tokens;
  }
  res_.trace_events.push_back({{"name", "prefix_cache"},
                               {"ph", "C"},
                               {"ts", now_ / 1000.0},
                               {"pid", rep_i},
                               {"args", {{"cached_tokens", cached}, {"hit_tokens_total", hits}}}});
}

void ServingPool::Emit(ReqState& r, int64_t tokens) {
  // Tokens that arrive together are one chunk: one inter-token gap, as the
  // serving benchmarks record a streamed chunk.
  if (r.last_token_ns >= 0 && !r.warmup) res_.itl_ns.Add(now_ - r.last_token_ns);
  if (r.first_token_ns < 0) r.first_token_ns = now_;
  r.last_token_ns = now_;
  r.generated += tokens;
}

void ServingPool::Finish(RankState& rank, ReqState& r, int64_t t) {
  ReleaseRequestPages(rank, env_, r.idx, /*insert=*/true, /*findable=*/!cfg_.prefix_self_only);
  r.status = ReqStatus::kDone;
  r.finish_ns = t;
  const int32_t idx = r.idx;
  Retire(r);
  ++done_;
  IssueNext(t);
  IssueFollowUps(idx, t);
}

// The next turns of a conversation start their think time at t.
void ServingPool::IssueFollowUps(int32_t idx, int64_t t) {
  if (follow_.empty()) return;
  for (int32_t f = follow_[idx].first; f >= 0; f = follow_[f].next) {
    Push(t + follow_[f].think_ns, EventClass::kArrival, f);
  }
}

// The prompt is computed; its KV stays (and counts in the pool) until the
// PD driver Release()s it after the transfer.
void ServingPool::Hold(ReqState& r, int32_t idx) {
  r.status = ReqStatus::kHandedOff;
  r.finish_ns = now_;
  TransferPages(r.pages);
  if (listener_ != nullptr) listener_->OnPromptHeld(id_, idx, now_);
}

void ServingPool::TransferPages(int64_t delta) {
  transfer_pages_ += delta;
  res_.peak_transfer_pages = std::max(res_.peak_transfer_pages, transfer_pages_);
}

// A request left the system at t: its concurrency slot goes to the oldest
// waiting client request.
void ServingPool::IssueNext(int64_t t) {
  --in_flight_;
  if (!backlog_.empty()) {
    const int32_t idx = backlog_.front();
    backlog_.pop_front();
    Send(idx, t);
  }
}

void ServingPool::HandleFailures() {
  for (size_t i = 0; i < failed_.size(); ++i) {
    Retire(reqs_[failed_[i]]);
    ++done_;
    IssueNext(now_);
    IssueFollowUps(failed_[i], now_);
    if (listener_ != nullptr) listener_->OnFailed(id_, failed_[i], now_);
  }
  failed_.clear();
}

Status ServingPool::CheckConservation() {
  Reap();
  int64_t completed = 0, failed = 0;
  for (const ReqState& r : res_.requests) {
    completed += r.status == ReqStatus::kDone;
    failed += r.status == ReqStatus::kFailed;
  }
  const int64_t in_flight = reqs_.open_count();
  for (const auto& rep : replicas_) {
    for (const auto& rk : rep.ranks) {
      res_.retractions += rk.retractions;
      res_.kv_bound = res_.kv_bound || rk.kv_bound;
      res_.peak_kv_pages_per_rank = std::max(res_.peak_kv_pages_per_rank, rk.pool.peak_used_pages());
      res_.kv_pages_per_rank = rk.pool.total_pages();
      // Pages still used at the end are exactly the cache's.
      const int64_t cached = rk.cache != nullptr ? rk.cache->cached_pages() : 0;
      if (rk.cache != nullptr) {
        res_.prefix_prompt_tokens += rk.prompt_tokens_admitted;
        res_.prefix_hit_tokens += rk.cache_hit_tokens;
        res_.prefix_evicted_blocks += rk.cache->stats().evicted_blocks;
        res_.prefix_cached_tokens_peak =
            std::max(res_.prefix_cached_tokens_peak,
                     rk.cache->stats().peak_cached_blocks * rk.cache->block_tokens());
        const prefix_cache::Stats& st = rk.cache->stats();
        res_.host_hit_tokens += rk.host_hit_tokens;
        res_.host_written_blocks += st.host_written_blocks;
        res_.host_loaded_blocks += st.host_loaded_blocks;
        res_.host_evicted_blocks += st.host_evicted_blocks;
        res_.host_blocks_peak = std::max(res_.host_blocks_peak, st.peak_host_blocks);
      }
      if (rk.pool.used_pages() != cached || rk.kv_tokens != 0 || rk.incoming_out_tokens != 0) {
        return Status::Internal("simulator conservation violated: a KV pool has " +
                                std::to_string(rk.pool.used_pages()) + " pages and " +
                                std::to_string(rk.kv_tokens) + " tokens still in use at the end");
      }
    }
  }
  // Every request leaves through Retire; without a sink the kept states
  // must say how (with one, the sink's own count is checked by its owner).
  const int64_t in = src_.size();
  const bool split_ok = cfg_.sink != nullptr || completed + failed == retired_;
  if (retired_ + in_flight != in || in_flight != 0 || !split_ok || transfer_pages_ != 0) {
    return Status::Internal("simulator conservation violated: requests in " + std::to_string(in) +
                            ", completed " + std::to_string(completed) + ", failed " +
                            std::to_string(failed) + ", still in flight " +
                            std::to_string(in_flight) + ", pages in transfer " +
                            std::to_string(transfer_pages_) + " after the event queue drained");
  }
  return Status::Ok();
}

Result<SimResult> ServingPool::TakeResult(int64_t end_ns) {
  res_.end_ns = end_ns;
  CountInFlight(end_ns + 1, 0);  // closes the last instant
  for (RangeSlot& s : range_slots_) FlushBusy(s);
  CAPPLAN_RETURN_IF_ERROR(CheckConservation());
  return std::move(res_);
}

}  // namespace capplan::sim
