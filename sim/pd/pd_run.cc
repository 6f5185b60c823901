#include "sim/pd/pd_run.h"

#include <algorithm>
#include <sstream>

#include "hw/profile.h"
#include "models/card.h"
#include "sim/event_loop.h"
#include "sim/event_queue.h"
#include "sim/metrics.h"
#include "sim/prediction_intervals.h"
#include "sim/prepared_run.h"
#include "sim/serving_pool.h"
#include "sim/sim_state.h"
#include "sim/simulate.h"
#include "sim/simulator.h"

namespace capplan::sim::pd {

namespace {

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// What a pool of several reports: its own summary's pool part without what
// only a co-located run shows, plus its pages, utilization and time in pool.
schema::PoolSummary PoolPart(const schema::RunSummary& own, const SimResult& sim,
                             const DeploymentSpec& d, double span_s,
                             const std::vector<double>& time_in_pool_ms, int64_t failed_here) {
  schema::PoolSummary p = own.pools.at(0);
  p.max_concurrent_requests.reset();
  p.kv_verify_time_share.reset();
  p.simulator.reset();
  p.simulator.emplace().fast_forward_iterations = sim.fast_forward_iterations;
  p.simulator->fast_forward_completions = sim.fast_forward_completions;
  p.completed = own.completed;
  // Pages, not tokens: reserved and held pages carry no tokens yet/any more
  // in the pool's token count but are taken all the same.
  p.kv_pages_per_rank = sim.kv_pages_per_rank;
  p.peak_kv_pages_per_rank = sim.peak_kv_pages_per_rank;
  p.peak_kv_page_fraction =
      sim.kv_pages_per_rank
          ? static_cast<double>(sim.peak_kv_pages_per_rank) / sim.kv_pages_per_rank
          : 0.0;
  p.peak_transfer_pages = sim.peak_transfer_pages;
  // busy_s sums every replica's iterations, so divide by replicas.
  const double busy = p.busy_s.value_or(0.0);
  // Over the whole simulated span (warmup included, as busy_s is): dividing
  // by the measured duration_s, which leaves warmup out, could exceed 1.
  p.utilization = span_s > 0 ? busy / (d.replicas * span_s) : 0.0;
  // A pool's own failures only: a request the other pool failed is marked
  // failed here too (for conservation) but is not this pool's doing.
  p.failed = failed_here;
  std::vector<std::string> warnings;
  for (const auto& w : p.warnings.value_or(std::vector<std::string>{})) {
    if (w.find("request(s) failed") == std::string::npos || failed_here > 0) {
      warnings.push_back(w);
    }
  }
  p.warnings = std::move(warnings);
  p.stages["time_in_pool"] = StatsOf(time_in_pool_ms);
  return p;
}

std::string Csv(const std::vector<PdRequest>& reqs) {
  std::ostringstream os;
  os << "id,arrival_ms,prefill_done_ms,transfer_ms,decode_arrival_ms,first_token_ms,finish_ms,"
        "input_tokens,output_tokens,ttft_ms,e2el_ms,warmup,status,reserve_ms,prefill_admit_ms,"
        "decode_admit_ms\n";
  os.precision(9);
  for (const auto& q : reqs) {
    os << q.id << ',' << Ms(q.arrival_ns) << ',' << Ms(q.prefill_done_ns) << ','
       << Ms(q.transfer_ns) << ',' << Ms(q.decode_arrival_ns) << ',' << Ms(q.first_token_ns) << ','
       << Ms(q.finish_ns) << ',' << q.input << ',' << q.generated << ','
       << (q.done ? Ms(q.first_token_ns - q.arrival_ns) : 0) << ','
       << (q.done ? Ms(q.finish_ns - q.arrival_ns) : 0) << ',' << (q.warmup ? 1 : 0) << ','
       << (q.done ? "completed" : "failed") << ',' << Ms(q.reserve_ns) << ','
       << Ms(q.prefill_admit_ns) << ',' << Ms(q.decode_admit_ns) << '\n';
  }
  return os.str();
}

// One track per stage (prefill pool, transfer, decode pool), one span per
// request per stage: shows where requests wait.
nlohmann::json Trace(const std::vector<PdRequest>& reqs) {
  nlohmann::json ev = nlohmann::json::array();
  const char* names[4] = {"decode reservation wait", "prefill pool (queue + prefill)",
                          "kv transfer (prefill pool holds the KV)",
                          "decode pool (queue + decode)"};
  for (int i = 0; i < 4; ++i) {
    ev.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", i}, {"args", {{"name", names[i]}}}});
  }
  for (const auto& q : reqs) {
    if (q.decode_arrival_ns < 0) continue;
    const int64_t t[5] = {q.arrival_ns, q.reserve_ns, q.prefill_done_ns, q.decode_arrival_ns,
                          q.finish_ns >= 0 ? q.finish_ns : q.decode_arrival_ns};
    for (int i = 0; i < 4; ++i) {
      ev.push_back({{"name", "req " + std::to_string(q.id)},
                    {"ph", "X"},
                    {"pid", i},
                    {"tid", q.id},
                    {"ts", t[i] / 1e3},
                    {"dur", (t[i + 1] - t[i]) / 1e3}});
    }
  }
  return {{"traceEvents", ev}, {"displayTimeUnit", "ms"}};
}

constexpr uint8_t kPrefillPool = 0;
constexpr uint8_t kDecodePool = 1;

// The PD protocol between the two pools (sim/pd/README.md "Protocol"): the
// pools report reservations, held prompts and failures; the driver sends
// reserved requests to the prefill pool and times the transfers.
class PdDriver : public PoolListener, public LinkHandler {
 public:
  PdDriver(const KvTransferPlan& tp, std::vector<PdRequest>* reqs) : tp_(tp), reqs_(*reqs) {}
  EventQueue* queue() { return &q_; }

  // Runs both pools on the one event loop until the queue drains (requests
  // enter and leave through the decode pool); returns the end time.
  int64_t Run(ServingPool* pre, ServingPool* dec, std::ostream* progress) {
    pre_ = pre;
    dec_ = dec;
    ServingPool* pools[] = {pre, dec};  // indexed by kPrefillPool, kDecodePool
    return RunEventLoop(q_, pools, dec, this, {.progress = progress, .exit_pool = dec});
  }

  // A prompt's KV arrived: the prefill pool frees it, the decode pool queues it.
  void OnLinkEvent(const Event& e) override {
    const int32_t idx = static_cast<int32_t>(e.target);
    reqs_[idx].decode_arrival_ns = e.time_ns;
    pre_->Release(idx, e.time_ns);
    dec_->Deliver(idx, e.time_ns);
  }

  void OnReserved(int, int32_t idx, int64_t now_ns) override {
    reqs_[idx].reserve_ns = now_ns;
    pre_->Send(idx, now_ns);
  }
  void OnPromptHeld(int, int32_t idx, int64_t now_ns) override {
    PdRequest& q = reqs_[idx];
    q.prefill_done_ns = now_ns;
    q.transfer_ns = tp_.ExposedNs(pre_->request(idx).input);
    q_.Push(now_ns + q.transfer_ns, EventClass::kTransferDone, idx);
  }
  void OnFailed(int pool, int32_t idx, int64_t now_ns) override {
    if (pool == kPrefillPool) {
      dec_->Abandon(idx, now_ns);  // give back its decode reservation
    } else if (pre_->status(idx) == ReqStatus::kPending) {
      pre_->Abandon(idx, now_ns);  // failed at reservation: never reaches prefill
    }
  }

 private:
  const KvTransferPlan& tp_;
  std::vector<PdRequest>& reqs_;
  EventQueue q_;
  ServingPool* pre_ = nullptr;
  ServingPool* dec_ = nullptr;
};

}  // namespace

Result<PdRunResult> RunPd(const Scenario& sc, const RunOptions& options) {
  size_t pre_i = sc.pools.size(), dec_i = sc.pools.size();
  for (size_t i = 0; i < sc.pools.size(); ++i) {
    if (sc.pools[i].role == schema::PoolRole::kPrefill) pre_i = i;
    if (sc.pools[i].role == schema::PoolRole::kDecode) dec_i = i;
  }
  if (pre_i == sc.pools.size() || dec_i == sc.pools.size() || !sc.transfer) {
    return Status::Internal(sc.origin +
                            ": a linked run needs a prefill pool, a decode pool and "
                            "a transfer");
  }
  const PoolSpec& ps = sc.pools[pre_i];
  const PoolSpec& ds = sc.pools[dec_i];
  RunOptions no_hooks;
  no_hooks.fast_forward = options.fast_forward;
  CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<PreparedRun> pre_prep, PrepareRun(sc, pre_i, no_hooks));
  CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<PreparedRun> dec_prep, PrepareRun(sc, dec_i, no_hooks));
  const models::Dtype src = ps.deployment.kv_cache, dst = ds.deployment.kv_cache;
  // Bytes per decode attention rank: the decode pool's card, layout and
  // profile, as PrepareRun derived them.
  const PreparedRun& dec_prepared = *dec_prep;
  auto plan_r = PlanKvTransfer(dec_prepared.card(), dec_prepared.layout(), src, dst, *sc.transfer,
                               dec_prepared.profile());
  if (!plan_r.ok()) return plan_r.status().WithPrefix(sc.origin + ": /pd/transfer");

  PdRunResult out;
  out.transfer = *plan_r;
  const KvTransferPlan& tp = out.transfer;

  // ---- Both pools in one event loop (sim/pd/README.md "Protocol") ----
  // The decode pool is where a request enters (its prealloc queue) and
  // leaves, so the workload's concurrency cap is enforced there, end to end
  // (PrepareRun gives a prefill pool none).
  const SimConfig& pre_cfg = pre_prep->config();
  const SimConfig& dec_cfg = dec_prep->config();
  const auto& wl = sc.workload.requests;
  out.requests.resize(wl.size());
  PdDriver driver(tp, &out.requests);
  auto pre_pool =
      ServingPool::Create(kPrefillPool, pre_cfg, pre_prep->requests(), pre_prep->pricer(),
                          driver.queue(), {.hold_kv_after_prefill = true}, &driver);
  if (!pre_pool.ok()) return pre_pool.status().WithPrefix("prefill pool");
  auto dec_pool =
      ServingPool::Create(kDecodePool, dec_cfg, dec_prep->requests(), dec_prep->pricer(),
                          driver.queue(), {.reserve_before_admit = true}, &driver);
  if (!dec_pool.ok()) return dec_pool.status().WithPrefix("decode pool");
  const int64_t end_ns = driver.Run(pre_pool->get(), dec_pool->get(), options.progress);
  auto pre_res = (*pre_pool)->TakeResult(end_ns);
  if (!pre_res.ok()) return pre_res.status().WithPrefix("prefill pool");
  auto dec_res = (*dec_pool)->TakeResult(end_ns);
  if (!dec_res.ok()) return dec_res.status().WithPrefix("decode pool");

  for (size_t i = 0; i < wl.size(); ++i) {
    PdRequest& q = out.requests[i];
    const ReqState& p = pre_res->requests[i];
    const ReqState& d = dec_res->requests[i];
    q.id = d.id;
    q.input = d.input;
    q.output = wl[i].output_tokens;
    q.warmup = d.warmup;
    q.arrival_ns = d.arrival_ns;  // the send time (TTFT origin): entering the decode prealloc queue
    q.prefill_admit_ns = p.admit_ns;
    q.decode_admit_ns = d.admit_ns;
    q.first_token_ns = d.first_token_ns;
    q.finish_ns = d.finish_ns;
    q.generated = d.generated;
    q.done = d.status == ReqStatus::kDone;
    // Conservation across the pools: a completed request was prefilled and
    // its prefill pages released; requests in = completed + failed (each
    // pool checked its own pages and requests in TakeResult).
    if (q.done && (p.status != ReqStatus::kDone || q.decode_arrival_ns < q.prefill_done_ns ||
                   q.reserve_ns < q.arrival_ns)) {
      return Status::Internal("PD conservation violated: request " + std::to_string(q.id) +
                              " completed in the decode pool without a released prefill");
    }
  }
  const PreparedRun& pre_run = *pre_prep;
  const PreparedRun& dec_run = *dec_prep;
  const schema::RunSummary pre_sum = pre_run.Summarize(*pre_res).summary;
  const schema::RunSummary dec_sum = dec_run.Summarize(*dec_res).summary;

  // ---- End to end ----
  std::vector<E2eRequest> e2e;
  // Where each completed request's TTFT went (sim/pd/README.md).
  std::vector<double> t_pre, t_xfer, t_dec_first, t_reserve, t_pre_queue, t_prefill, t_dec_queue,
      t_first_step;
  int64_t completed = 0, failed = 0;
  for (const PdRequest& q : out.requests) {
    e2e.push_back({q.arrival_ns, q.first_token_ns, q.finish_ns, q.input, q.generated, q.done,
                   q.warmup});
    (q.done ? completed : failed) += 1;
    if (q.warmup || !q.done) continue;
    t_pre.push_back(Ms(q.prefill_done_ns - q.arrival_ns));
    t_xfer.push_back(Ms(q.transfer_ns));
    t_dec_first.push_back(Ms(q.first_token_ns - q.decode_arrival_ns));
    t_reserve.push_back(Ms(q.reserve_ns - q.arrival_ns));
    t_pre_queue.push_back(Ms(q.prefill_admit_ns - q.reserve_ns));
    t_prefill.push_back(Ms(q.prefill_done_ns - q.prefill_admit_ns));
    t_dec_queue.push_back(Ms(q.decode_admit_ns - q.decode_arrival_ns));
    t_first_step.push_back(Ms(q.first_token_ns - q.decode_admit_ns));
  }
  if (completed + failed != static_cast<int64_t>(wl.size())) {
    return Status::Internal("PD conservation violated: requests in " + std::to_string(wl.size()) +
                            ", completed " + std::to_string(completed) + ", failed " +
                            std::to_string(failed));
  }
  const int pre_gpus = ps.deployment.gpus * ps.deployment.replicas;
  const int dec_gpus = ds.deployment.gpus * ds.deployment.replicas;
  const SloLimits slo{sc.slo.ttft_ms, sc.slo.tpot_ms, sc.slo.e2el_ms};

  schema::RunSummary s;
  s.scenario = sc.name;
  s.model = sc.model;
  s.hardware = sc.hardware;
  s.workload = pre_sum.workload;
  // GPU-hours of both pools over the run, whether busy or not.
  const E2eTotals totals =
      AddEndToEndSummary(e2e, pre_gpus + dec_gpus, sc.usd_per_gpu_hour, slo, &s);
  const double duration = totals.duration_s;
  s.itl = dec_sum.itl;  // every token after the first comes from the decode pool

  // Failed at the decode reservation or while decoding, vs in the prefill
  // pool (its reservation then given back, the KV never sent).
  int64_t failed_pre = 0, failed_dec = 0;
  for (size_t i = 0; i < wl.size(); ++i) {
    const PdRequest& q = out.requests[i];
    if (pre_res->requests[i].status == ReqStatus::kFailed && q.reserve_ns >= 0) ++failed_pre;
    if (dec_res->requests[i].status == ReqStatus::kFailed &&
        (q.reserve_ns < 0 || q.decode_arrival_ns >= 0)) {
      ++failed_dec;
    }
  }
  const double span_s = static_cast<double>(end_ns) / 1e9;
  schema::PoolSummary pre = PoolPart(pre_sum, *pre_res, ps.deployment, span_s, t_pre, failed_pre);
  schema::PoolSummary dec =
      PoolPart(dec_sum, *dec_res, ds.deployment, span_s, t_dec_first, failed_dec);
  pre.name = ps.name;
  pre.role = ps.role;
  dec.name = ds.name;
  dec.role = ds.role;
  pre.cost_usd = sc.usd_per_gpu_hour * pre_gpus * duration / 3600.0;
  dec.cost_usd = sc.usd_per_gpu_hour * dec_gpus * duration / 3600.0;
  pre.notes["time_in_pool"] =
      "wait for a decode reservation + prefill queue + prefill, from arrival to prompt computed";
  dec.notes["time_in_pool"] = "decode queue + first decode step, from KV arrival to first token";
  dec.stages["reservation_wait"] = StatsOf(t_reserve);
  pre.stages["prefill_queue"] = StatsOf(t_pre_queue);
  pre.stages["prefill"] = StatsOf(t_prefill);
  dec.stages["decode_queue"] = StatsOf(t_dec_queue);
  dec.stages["first_decode_step"] = StatsOf(t_first_step);
  pre.notes["peak_transfer_pages"] =
      "pages of computed prompts held until their KV transfer completes (all ranks)";
  dec.notes["peak_transfer_pages"] =
      "pages reserved for prompts whose KV has not arrived yet (all ranks)";
  s.pools = {std::move(pre), std::move(dec)};
  s.notes["ttft_decomposition"] =
      "ttft = pools.decode.reservation_wait + pools.prefill.prefill_queue + pools.prefill.prefill "
      "+ transfer.exposed_transfer + pools.decode.decode_queue + pools.decode.first_decode_step";
  schema::Transfer& t = s.transfer.emplace();
  t.link = tp.link;
  t.layerwise_overlap = tp.layerwise_overlap;
  t.src_kv_dtype = models::DtypeName(tp.src_dtype);
  t.dst_kv_dtype = models::DtypeName(tp.dst_dtype);
  t.src_bytes_per_token_per_rank = tp.src_bytes_per_token;
  t.dst_bytes_per_token_per_rank = tp.dst_bytes_per_token;
  t.wire_bytes_per_token_per_rank = tp.wire_bytes_per_token;
  t.bandwidth_bytes_per_s = tp.bandwidth_bytes_per_s;
  t.latency_s = tp.latency_s;
  t.latency_source = tp.latency_source;
  t.exposed_transfer = StatsOf(t_xfer);
  s.model_limits = std::vector<std::string>{
      "layer-by-layer overlap assumes sending one layer's KV takes no longer than computing it",
      "transfers do not contend for link bandwidth: each takes latency + bytes / bandwidth",
      "the first token is not sampled by the prefill pool: it comes from the first decode step "
      "after the KV arrives",
      "a retracted decode request's KV goes to host memory and back without a priced copy"};
  CAPPLAN_RETURN_IF_ERROR(AddPredictionIntervals(&s));
  out.summary = std::move(s);
  return out;
}

Status RequireCompletions(const Scenario& sc, const PdRunResult& run) {
  const bool none_done = std::none_of(run.requests.begin(), run.requests.end(),
                                      [](const PdRequest& q) { return q.done; });
  if (run.requests.empty() || !none_done) return Status::Ok();
  return Status::Invalid(sc.origin + ": /workload: all " + std::to_string(run.requests.size()) +
                         " requests failed: none fits the KV pools (prefill and decode); "
                         "shorten the requests, use an fp8 KV cache or more memory per rank");
}

Result<RunResult> RunLinkedPools(const Scenario& sc, const RunOptions& options) {
  CAPPLAN_ASSIGN_OR_RETURN(PdRunResult r, RunPd(sc, options));
  CAPPLAN_RETURN_IF_ERROR(RequireCompletions(sc, r));
  RunResult out;
  if (options.requests_csv_out != nullptr) {
    *options.requests_csv_out << Csv(r.requests);
  } else if (options.want_requests_csv) {
    out.requests_csv = Csv(r.requests);
  }
  if (options.want_trace) out.trace = Trace(r.requests);
  out.summary = std::move(r.summary);
  return out;
}

}  // namespace capplan::sim::pd
