#include "sim/pd/pd_run.h"

#include <algorithm>

#include "hw/profile.h"
#include "models/card.h"
#include "sim/event_queue.h"
#include "sim/metrics.h"
#include "sim/prediction_intervals.h"
#include "sim/prepared_run.h"
#include "sim/serving_pool.h"
#include "sim/sim_state.h"
#include "sim/simulate.h"
#include "sim/simulator.h"

namespace capplan {

namespace {

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// What a pool reports besides the end-to-end metrics.
nlohmann::json PoolSummary(const nlohmann::json& s, const SimResult& sim, const DeploymentSpec& d,
                           double span_s, const std::vector<double>& time_in_pool_ms,
                           int64_t failed_here) {
  nlohmann::json p;
  // Pages, not tokens: reserved and held pages carry no tokens yet/any more
  // in the pool's token count but are taken all the same.
  p["kv_pages_per_rank"] = sim.kv_pages_per_rank;
  p["peak_kv_pages_per_rank"] = sim.peak_kv_pages_per_rank;
  p["peak_kv_page_fraction"] =
      sim.kv_pages_per_rank ? static_cast<double>(sim.peak_kv_pages_per_rank) / sim.kv_pages_per_rank
                            : 0.0;
  p["peak_transfer_pages"] = sim.peak_transfer_pages;
  for (const char* k : {"deployment", "gpus", "kv_capacity_tokens", "kv_bytes_per_token",
                        "peak_kv_tokens", "peak_kv_fraction", "retractions", "kv_bound",
                        "iterations", "busy_s", "memory", "op_time_share", "bound_time_share",
                        "warnings", "max_running_requests_observed", "completed", "failed"}) {
    if (s.contains(k)) p[k] = s[k];
  }
  // busy_s sums every replica's iterations, so divide by replicas.
  const double busy = s.value("busy_s", 0.0);
  // Over the whole simulated span (warmup included, as busy_s is): dividing
  // by the measured duration_s, which leaves warmup out, could exceed 1.
  p["utilization"] = span_s > 0 ? busy / (d.replicas * span_s) : 0.0;
  // A pool's own failures only: a request the other pool failed is marked
  // failed here too (for conservation) but is not this pool's doing.
  p["failed"] = failed_here;
  nlohmann::json warnings = nlohmann::json::array();
  for (const auto& w : s.value("warnings", nlohmann::json::array())) {
    if (w.get<std::string>().find("request(s) failed") == std::string::npos || failed_here > 0) {
      warnings.push_back(w);
    }
  }
  p["warnings"] = warnings;
  AddStats(p, "time_in_pool", time_in_pool_ms);
  return p;
}

constexpr uint8_t kPrefillPool = 0;
constexpr uint8_t kDecodePool = 1;

// The PD protocol between the two pools (sim/pd/README.md "Protocol"): the
// pools report reservations, held prompts and failures; the driver sends
// reserved requests to the prefill pool and times the transfers.
class PdDriver : public PoolListener {
 public:
  PdDriver(const KvTransferPlan& tp, std::vector<PdRequest>* reqs) : tp_(tp), reqs_(*reqs) {}
  EventQueue* queue() { return &q_; }

  // Runs until the queue drains; returns the end time.
  int64_t Run(ServingPool* pre, ServingPool* dec) {
    pre_ = pre;
    dec_ = dec;
    dec_->StartArrivals();
    int64_t now = 0;
    while (!q_.empty()) {
      const Event e = q_.Pop();
      now = e.time_ns;
      if (e.cls == EventClass::kTransferDone) {
        const int32_t idx = static_cast<int32_t>(e.target);
        reqs_[idx].decode_arrival_ns = now;
        pre_->Release(idx, now);
        dec_->Deliver(idx, now);
      } else {
        (e.pool == kPrefillPool ? pre_ : dec_)->Handle(e);
      }
    }
    return now;
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
    } else if (pre_->request(idx).status == ReqStatus::kPending) {
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

Result<PdRunResult> RunPd(const PdScenario& pd) {
  const Scenario& ps = *pd.prefill;
  const Scenario& ds = *pd.decode;
  RunOptions no_hooks;
  auto pre_prep = PrepareRun(ps, no_hooks);
  if (!pre_prep.ok()) return pre_prep.status().WithPrefix("prefill pool");
  auto dec_prep = PrepareRun(ds, no_hooks);
  if (!dec_prep.ok()) return dec_prep.status().WithPrefix("decode pool");
  auto src = ParseDtype(ps.deployment.kv_cache);
  if (!src.ok()) return src.status().WithPrefix(pd.origin + ": /pd/prefill/kv_cache");
  auto dst = ParseDtype(ds.deployment.kv_cache);
  if (!dst.ok()) return dst.status().WithPrefix(pd.origin + ": /pd/decode/kv_cache");
  // Bytes per decode attention rank: the decode pool's card, layout and
  // profile, as PrepareRun derived them.
  const PreparedRun& dec_prepared = **dec_prep;
  auto plan_r = PlanKvTransfer(dec_prepared.card(), dec_prepared.layout(), *src, *dst,
                               pd.transfer, dec_prepared.profile());
  if (!plan_r.ok()) return plan_r.status().WithPrefix(pd.origin + ": /pd/transfer");

  PdRunResult out;
  out.transfer = *plan_r;
  const KvTransferPlan& tp = out.transfer;

  // ---- Both pools in one event loop (sim/pd/README.md "Protocol") ----
  // The decode pool is where a request enters (its prealloc queue) and
  // leaves, so the workload's concurrency cap is enforced there, end to end.
  SimConfig pre_cfg = (*pre_prep)->config();
  pre_cfg.concurrency = 0;
  const SimConfig& dec_cfg = (*dec_prep)->config();
  const auto& wl = ps.workload.requests;
  out.requests.resize(wl.size());
  PdDriver driver(tp, &out.requests);
  auto pre_pool = ServingPool::Create(kPrefillPool, pre_cfg, (*pre_prep)->specs(),
                                      (*pre_prep)->pricer(), driver.queue(),
                                      {.hold_kv_after_prefill = true}, &driver);
  if (!pre_pool.ok()) return pre_pool.status().WithPrefix("prefill pool");
  auto dec_pool = ServingPool::Create(kDecodePool, dec_cfg, (*dec_prep)->specs(),
                                      (*dec_prep)->pricer(), driver.queue(),
                                      {.reserve_before_admit = true}, &driver);
  if (!dec_pool.ok()) return dec_pool.status().WithPrefix("decode pool");
  const int64_t end_ns = driver.Run(pre_pool->get(), dec_pool->get());
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
  const PreparedRun& pre_run = **pre_prep;
  const PreparedRun& dec_run = **dec_prep;
  const nlohmann::json pre_sum = pre_run.Summarize(*pre_res).summary;
  const nlohmann::json dec_sum = dec_run.Summarize(*dec_res).summary;

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
  const SloLimits slo{ps.slo.ttft_ms, ps.slo.tpot_ms, ps.slo.e2el_ms};

  nlohmann::json s;
  s["scenario"] = pd.name;
  s["model"] = ps.model;
  s["hardware"] = ps.hardware;
  s["disaggregated"] = true;
  s["workload"] = pre_sum["workload"];
  // GPU-hours of both pools over the run, whether busy or not.
  const E2eTotals totals =
      AddEndToEndSummary(e2e, pre_gpus + dec_gpus, ps.usd_per_gpu_hour, slo, &s);
  const double duration = totals.duration_s;
  s["cost_usd_prefill_pool"] = ps.usd_per_gpu_hour * pre_gpus * duration / 3600.0;
  s["cost_usd_decode_pool"] = ps.usd_per_gpu_hour * dec_gpus * duration / 3600.0;

  for (const char* k : {"mean_itl_ms", "median_itl_ms", "p90_itl_ms", "p99_itl_ms"}) {
    s[k] = dec_sum[k];  // every token after the first comes from the decode pool
  }
  nlohmann::json pools;
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
  pools["prefill"] = PoolSummary(pre_sum, *pre_res, ps.deployment, span_s, t_pre, failed_pre);
  pools["decode"] = PoolSummary(dec_sum, *dec_res, ds.deployment, span_s, t_dec_first, failed_dec);
  pools["prefill"]["time_in_pool_note"] =
      "wait for a decode reservation + prefill queue + prefill, from arrival to prompt computed";
  pools["decode"]["time_in_pool_note"] =
      "decode queue + first decode step, from KV arrival to first token";
  AddStats(pools["decode"], "reservation_wait", t_reserve);
  AddStats(pools["prefill"], "prefill_queue", t_pre_queue);
  AddStats(pools["prefill"], "prefill", t_prefill);
  AddStats(pools["decode"], "decode_queue", t_dec_queue);
  AddStats(pools["decode"], "first_decode_step", t_first_step);
  pools["prefill"]["peak_transfer_pages_note"] =
      "pages of computed prompts held until their KV transfer completes (all ranks)";
  pools["decode"]["peak_transfer_pages_note"] =
      "pages reserved for prompts whose KV has not arrived yet (all ranks)";
  s["pools"] = pools;
  s["ttft_decomposition_note"] =
      "ttft = pools.decode.reservation_wait + pools.prefill.prefill_queue + pools.prefill.prefill "
      "+ transfer.exposed_transfer + pools.decode.decode_queue + pools.decode.first_decode_step";
  nlohmann::json t = {{"link", tp.link},
                      {"layerwise_overlap", tp.layerwise_overlap},
                      {"src_kv_dtype", DtypeName(tp.src_dtype)},
                      {"dst_kv_dtype", DtypeName(tp.dst_dtype)},
                      {"src_bytes_per_token_per_rank", tp.src_bytes_per_token},
                      {"dst_bytes_per_token_per_rank", tp.dst_bytes_per_token},
                      {"wire_bytes_per_token_per_rank", tp.wire_bytes_per_token},
                      {"bandwidth_bytes_per_s", tp.bandwidth_bytes_per_s},
                      {"latency_s", tp.latency_s},
                      {"latency_source", tp.latency_source}};
  AddStats(t, "exposed_transfer", t_xfer);
  s["transfer"] = t;
  s["model_limits"] = {
      "layer-by-layer overlap assumes sending one layer's KV takes no longer than computing it",
      "transfers do not contend for link bandwidth: each takes latency + bytes / bandwidth",
      "the first token is not sampled by the prefill pool: it comes from the first decode step "
      "after the KV arrives",
      "a retracted decode request's KV goes to host memory and back without a priced copy"};
  CAPPLAN_RETURN_IF_ERROR(AddPredictionIntervals(&s));
  out.summary = std::move(s);
  return out;
}

Status RequireCompletions(const PdScenario& pd, const PdRunResult& run) {
  const bool none_done = std::none_of(run.requests.begin(), run.requests.end(),
                                      [](const PdRequest& q) { return q.done; });
  if (run.requests.empty() || !none_done) return Status::Ok();
  return Status::Invalid(pd.origin + ": /workload: all " + std::to_string(run.requests.size()) +
                         " requests failed: none fits the KV pools (prefill and decode); "
                         "shorten the requests, use an fp8 KV cache or more memory per rank");
}

}  // namespace capplan
