#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <memory>
#include <ostream>

#include "sim/event_queue.h"
#include "sim/scheduler.h"

namespace capplan {

namespace {

struct Replica {
  std::vector<RankState> ranks;
  std::vector<RankBatch> batches;
  bool busy = false;
  bool schedule_pending = false;
  int64_t step_start_ns = 0;
  int64_t next_rank = 0;  // round-robin cursor over ranks
};

class Sim {
 public:
  Sim(const SimConfig& c, const std::vector<SimRequestSpec>& specs, StepPricer& pricer,
      std::unique_ptr<Scheduler> sched)
      : cfg_(c), pricer_(pricer), sched_(std::move(sched)) {
    res_.requests.resize(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      ReqState& r = res_.requests[i];
      r.id = specs[i].id;
      r.arrival_ns = specs[i].arrival_ns;
      r.input = specs[i].input_tokens;
      r.output = std::max<int64_t>(specs[i].output_tokens, 1);
      r.warmup = specs[i].warmup;
    }
    order_.resize(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) order_[i] = static_cast<int32_t>(i);
    {
      std::stable_sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) {
        return res_.requests[a].arrival_ns < res_.requests[b].arrival_ns;
      });
    }
    replicas_.resize(c.replicas);
    for (auto& rep : replicas_) {
      rep.ranks.resize(c.ranks_per_replica);
      rep.batches.resize(c.ranks_per_replica);
      for (auto& rk : rep.ranks) {
        rk.pool = KvPool(c.kv_tokens_per_rank, c.page_size);
        rk.new_token_ratio = c.sched.init_new_token_ratio;
      }
    }
    res_.kv_capacity_tokens_per_replica =
        replicas_.empty() ? 0
                          : replicas_[0].ranks[0].pool.capacity_tokens() * c.ranks_per_replica;
    env_.reqs = &res_.requests;
    env_.admit_counter = &admit_counter_;
    env_.failed = &failed_;
  }

  Result<SimResult> Run() {
    const auto wall0 = std::chrono::steady_clock::now();
    if (!order_.empty()) {
      q_.Push(res_.requests[order_[0]].arrival_ns, EventClass::kArrival, order_[cursor_++]);
    }
    while (!q_.empty()) {
      const Event e = q_.Pop();
      now_ = e.time_ns;
      switch (e.cls) {
        case EventClass::kStepEnd: OnStepEnd(static_cast<int>(e.target)); break;
        case EventClass::kArrival: OnArrival(static_cast<int32_t>(e.target)); break;
        case EventClass::kSchedule: OnSchedule(static_cast<int>(e.target)); break;
      }
      if (cfg_.progress != nullptr && (res_.iterations & 0x3fff) == 0 && res_.iterations > 0) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
        if (s > 1.0) {
          *cfg_.progress << "\rsimulate: " << done_ << "/" << res_.requests.size()
                         << " requests" << std::flush;
          progress_shown_ = true;
        }
      }
    }
    if (progress_shown_) *cfg_.progress << "\n";
    res_.end_ns = now_;
    CAPPLAN_RETURN_IF_ERROR(CheckConservation());
    return std::move(res_);
  }

 private:
  // A request reaches the client: sent now when a concurrency slot is free,
  // else it waits for one (FIFO).
  void OnArrival(int32_t idx) {
    if (cursor_ < order_.size()) {
      const int32_t next = order_[cursor_++];
      q_.Push(std::max(now_, res_.requests[next].arrival_ns), EventClass::kArrival, next);
    }
    if (cfg_.concurrency > 0 && in_flight_ >= cfg_.concurrency) {
      backlog_.push_back(idx);
      return;
    }
    Send(idx);
  }

  void Send(int32_t idx) {
    ReqState& r = res_.requests[idx];
    r.arrival_ns = now_;
    ++in_flight_;
    const int rep_i = Route();
    Replica& rep = replicas_[rep_i];
    const int rank_i = PickRank(rep);
    RankState& rank = rep.ranks[rank_i];
    r.instance = rep_i;
    r.rank = rank_i;
    r.status = ReqStatus::kWaiting;
    r.prompt_target = r.input;
    rank.waiting.push_back(idx);
    rank.queued_tokens += r.input;
    WakeUp(rep_i);
  }

  static int64_t Load(const RankState& rk) { return rk.kv_tokens + rk.queued_tokens; }

  int Route() {
    if (cfg_.router == "least_kv") {
      int best = 0;
      int64_t best_load = INT64_MAX;
      for (size_t i = 0; i < replicas_.size(); ++i) {
        int64_t load = 0;
        for (const auto& rk : replicas_[i].ranks) load += Load(rk);
        if (load < best_load) {
          best_load = load;
          best = static_cast<int>(i);
        }
      }
      return best;
    }
    return static_cast<int>(next_replica_++ % replicas_.size());
  }

  int PickRank(Replica& rep) {
    if (rep.ranks.size() == 1) return 0;
    if (cfg_.router == "least_kv") {
      int best = 0;
      for (size_t i = 1; i < rep.ranks.size(); ++i) {
        if (Load(rep.ranks[i]) < Load(rep.ranks[best])) best = static_cast<int>(i);
      }
      return best;
    }
    return static_cast<int>(rep.next_rank++ % rep.ranks.size());
  }

  void WakeUp(int rep_i) {
    Replica& rep = replicas_[rep_i];
    if (rep.busy || rep.schedule_pending) return;
    rep.schedule_pending = true;
    q_.Push(now_, EventClass::kSchedule, rep_i);
  }

  void OnSchedule(int rep_i) {
    Replica& rep = replicas_[rep_i];
    rep.schedule_pending = false;
    if (rep.busy) return;
    env_.now_ns = now_;
    double seconds = 0;
    const StepCost* slowest = nullptr;
    int64_t admitted = 0, decode_n = 0, prefill_tokens = 0;
    bool any = false;
    for (size_t k = 0; k < rep.ranks.size(); ++k) {
      RankBatch& b = rep.batches[k];
      b = RankBatch();
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
      const StepCost& c = pricer_.Price(work_);
      // DP-attention ranks step in lockstep: the slowest sets the pace.
      if (slowest == nullptr || c.seconds > seconds) {
        seconds = c.seconds;
        slowest_copy_ = c;
        slowest = &slowest_copy_;
      }
    }
    res_.max_running_requests = std::max(res_.max_running_requests, admitted);
    HandleFailures();
    if (!any) return;
    rep.busy = true;
    rep.step_start_ns = now_;
    const int64_t dur = std::max<int64_t>(1, std::llround(seconds * 1e9));
    res_.busy.Add(*slowest);
    ++res_.iterations;
    if (cfg_.want_trace) Trace(rep_i, dur, decode_n, prefill_tokens);
    q_.Push(now_ + dur, EventClass::kStepEnd, rep_i);
  }

  void Trace(int rep_i, int64_t dur, int64_t decode_n, int64_t prefill_tokens) {
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
  }

  void Emit(ReqState& r) {
    if (r.last_token_ns >= 0 && !r.warmup) res_.itl_ns.Add(now_ - r.last_token_ns);
    if (r.first_token_ns < 0) r.first_token_ns = now_;
    r.last_token_ns = now_;
    ++r.generated;
  }

  bool Finished(const ReqState& r) const {
    return r.generated >= r.output || cfg_.sched.phase == Phase::kPrefillOnly;
  }

  void Finish(RankState& rank, ReqState& r) {
    rank.pool.Free(r.pages);
    rank.kv_tokens -= r.kv_tokens;
    r.pages = 0;
    r.kv_tokens = 0;
    r.status = ReqStatus::kDone;
    r.finish_ns = now_;
    ++done_;
    IssueNext();
  }

  // A request left the system: its concurrency slot goes to the oldest
  // waiting client request.
  void IssueNext() {
    --in_flight_;
    if (!backlog_.empty()) {
      const int32_t idx = backlog_.front();
      backlog_.pop_front();
      Send(idx);
    }
  }

  void HandleFailures() {
    for (size_t i = 0; i < failed_.size(); ++i) {
      ++done_;
      IssueNext();
    }
    failed_.clear();
  }

  void OnStepEnd(int rep_i) {
    Replica& rep = replicas_[rep_i];
    std::vector<ReqState>& reqs = res_.requests;
    int64_t kv = 0;
    for (size_t k = 0; k < rep.ranks.size(); ++k) {
      RankState& rank = rep.ranks[k];
      RankBatch& b = rep.batches[k];
      if (b.decode) {
        size_t keep = 0;
        for (size_t j = 0; j < rank.running.size(); ++j) {
          const int32_t idx = rank.running[j];
          ReqState& r = reqs[idx];
          ++r.kv_tokens;
          ++rank.kv_tokens;
          Emit(r);
          if (Finished(r)) {
            Finish(rank, r);
          } else {
            rank.running[keep++] = idx;
          }
        }
        rank.running.resize(keep);
      }
      for (const auto& c : b.prefill) {
        ReqState& r = reqs[c.req];
        r.prefilled += c.tokens;
        r.kv_tokens += c.tokens;
        rank.kv_tokens += c.tokens;
        if (r.prefilled < r.prompt_target) continue;
        rank.prefilling.erase(std::find(rank.prefilling.begin(), rank.prefilling.end(), c.req));
        Emit(r);
        if (Finished(r)) {
          Finish(rank, r);
        } else {
          r.status = ReqStatus::kDecoding;
          rank.running.push_back(c.req);
        }
      }
      b = RankBatch();
      kv += rank.kv_tokens;
    }
    res_.peak_kv_tokens = std::max(res_.peak_kv_tokens, kv);
    rep.busy = false;
    WakeUp(rep_i);
  }

  Status CheckConservation() {
    int64_t completed = 0, failed = 0, in_flight = 0;
    for (const auto& r : res_.requests) {
      if (r.status == ReqStatus::kDone) {
        ++completed;
      } else if (r.status == ReqStatus::kFailed) {
        ++failed;
      } else {
        ++in_flight;
      }
    }
    for (const auto& rep : replicas_) {
      for (const auto& rk : rep.ranks) {
        res_.retractions += rk.retractions;
        res_.kv_bound = res_.kv_bound || rk.kv_bound;
        if (rk.pool.free_pages() != rk.pool.total_pages() || rk.kv_tokens != 0) {
          return Status::Internal("simulator conservation violated: a KV pool has " +
                                  std::to_string(rk.pool.used_pages()) + " pages and " +
                                  std::to_string(rk.kv_tokens) + " tokens still in use at the end");
        }
      }
    }
    const int64_t in = static_cast<int64_t>(res_.requests.size());
    if (completed + failed + in_flight != in || in_flight != 0) {
      return Status::Internal("simulator conservation violated: requests in " + std::to_string(in) +
                              ", completed " + std::to_string(completed) + ", failed " +
                              std::to_string(failed) + ", still in flight " +
                              std::to_string(in_flight) + " after the event queue drained");
    }
    return Status::Ok();
  }

  SimConfig cfg_;
  StepPricer& pricer_;
  std::unique_ptr<Scheduler> sched_;
  SimResult res_;
  std::vector<int32_t> order_;
  size_t cursor_ = 0;
  int64_t in_flight_ = 0;
  std::deque<int32_t> backlog_;
  std::vector<Replica> replicas_;
  EventQueue q_;
  int64_t now_ = 0;
  int64_t admit_counter_ = 0;
  int64_t done_ = 0;
  uint64_t next_replica_ = 0;
  std::vector<int32_t> failed_;
  SchedulerEnv env_;
  StepWork work_;
  StepCost slowest_copy_;
  bool progress_shown_ = false;
};

}  // namespace

Result<SimResult> Simulate(const SimConfig& config, const std::vector<SimRequestSpec>& specs,
                           StepPricer& pricer) {
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
  if (config.router != "round_robin" && config.router != "least_kv") {
    return Status::Usage("unknown router '" + config.router + "'; known: least_kv, round_robin");
  }
  CAPPLAN_ASSIGN_OR_RETURN(SchedulerFactory f, Schedulers().Find(config.scheduler));
  Sim sim(config, specs, pricer, f(config.sched));
  return sim.Run();
}

}  // namespace capplan
