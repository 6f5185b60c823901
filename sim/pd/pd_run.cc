#include "sim/pd/pd_run.h"

#include <algorithm>

#include "calibrate/profile.h"
#include "models/card.h"
#include "sim/metrics.h"
#include "sim/sim_state.h"
#include "sim/simulate.h"
#include "sim/simulator.h"

namespace capplan {

namespace {

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

ParallelLayout LayoutOf(const DeploymentSpec& d) {
  ParallelLayout l;
  l.gpus = d.gpus;
  l.tp = d.tp;
  l.ep = d.ep;
  l.dp_attention = d.dp_attention;
  l.dp = d.dp_attention ? (d.dp > 0 ? d.dp : d.tp) : 1;
  return l;
}

// What a pool reports besides the end-to-end metrics.
nlohmann::json PoolSummary(const nlohmann::json& s, const DeploymentSpec& d, double span_s,
                           const std::vector<double>& time_in_pool_ms) {
  nlohmann::json p;
  for (const char* k : {"deployment", "gpus", "kv_capacity_tokens", "kv_bytes_per_token",
                        "peak_kv_tokens", "peak_kv_fraction", "retractions", "kv_bound",
                        "iterations", "busy_s", "memory", "op_time_share", "bound_time_share",
                        "warnings", "max_running_requests_observed", "completed", "failed"}) {
    if (s.contains(k)) p[k] = s[k];
  }
  // busy_s sums every replica's iterations, so divide by replicas.
  const double busy = s.value("busy_s", 0.0);
  p["utilization"] = span_s > 0 ? busy / (d.replicas * span_s) : 0.0;
  AddStats(p, "time_in_pool", time_in_pool_ms);
  return p;
}

}  // namespace

Result<PdRunResult> RunPd(const PdScenario& pd) {
  const Scenario& ps = *pd.prefill;
  const Scenario& ds = *pd.decode;
  auto card_r = LoadModelCard(ps.model);
  if (!card_r.ok()) return card_r.status().WithPrefix(pd.origin + ": /model");
  auto prof_r = LoadHardwareProfile(ps.hardware);
  if (!prof_r.ok()) return prof_r.status().WithPrefix(pd.origin + ": /hardware");
  auto src = ParseDtype(ps.deployment.kv_cache);
  if (!src.ok()) return src.status().WithPrefix(pd.origin + ": /pd/prefill/kv_cache");
  auto dst = ParseDtype(ds.deployment.kv_cache);
  if (!dst.ok()) return dst.status().WithPrefix(pd.origin + ": /pd/decode/kv_cache");
  auto plan_r = PlanKvTransfer(*card_r, LayoutOf(ds.deployment), *src, *dst, pd.transfer, *prof_r);
  if (!plan_r.ok()) return plan_r.status().WithPrefix(pd.origin + ": /pd/transfer");

  PdRunResult out;
  out.transfer = *plan_r;
  const KvTransferPlan& tp = out.transfer;

  // ---- Prefill pool ----
  std::vector<ReqState> pre;
  RunOptions po;
  po.requests_out = &pre;
  auto pre_r = RunScenario(ps, po);
  if (!pre_r.ok()) return pre_r.status().WithPrefix("prefill pool");

  const auto& wl = ps.workload.requests;
  out.requests.resize(wl.size());
  std::vector<SimRequestSpec> dspecs;
  std::vector<size_t> dindex;  // decode spec -> workload index
  for (size_t i = 0; i < wl.size(); ++i) {
    PdRequest& q = out.requests[i];
    const ReqState& r = pre[i];
    q.id = wl[i].id;
    q.arrival_ns = r.arrival_ns;  // the send time (TTFT origin)
    q.input = wl[i].input_tokens;
    q.output = wl[i].output_tokens;
    q.warmup = static_cast<int64_t>(i) < ps.workload.warmup_requests;
    if (r.status != ReqStatus::kDone) continue;  // never fit a prefill rank
    q.prefill_done_ns = r.finish_ns;
    q.transfer_ns = tp.ExposedNs(q.input);
    q.decode_arrival_ns = q.prefill_done_ns + q.transfer_ns;
    dspecs.push_back({q.id, q.decode_arrival_ns, q.input, q.output, q.warmup});
    dindex.push_back(i);
  }

  // ---- Decode pool ----
  std::vector<ReqState> dec;
  RunOptions dopt;
  dopt.specs_override = &dspecs;
  dopt.requests_out = &dec;
  auto dec_r = RunScenario(ds, dopt);
  if (!dec_r.ok()) return dec_r.status().WithPrefix("decode pool");
  if (dec.size() != dspecs.size()) {
    return Status::Internal("decode pool returned " + std::to_string(dec.size()) +
                            " requests for " + std::to_string(dspecs.size()));
  }
  for (size_t j = 0; j < dec.size(); ++j) {
    PdRequest& q = out.requests[dindex[j]];
    q.first_token_ns = dec[j].first_token_ns;
    q.finish_ns = dec[j].finish_ns;
    q.generated = dec[j].generated;
    q.done = dec[j].status == ReqStatus::kDone;
  }

  // ---- End to end ----
  std::vector<E2eRequest> e2e;
  std::vector<double> t_pre, t_xfer, t_dec_first;
  for (const PdRequest& q : out.requests) {
    e2e.push_back({q.arrival_ns, q.first_token_ns, q.finish_ns, q.input, q.generated, q.done,
                   q.warmup});
    if (q.warmup || !q.done) continue;
    t_pre.push_back(Ms(q.prefill_done_ns - q.arrival_ns));
    t_xfer.push_back(Ms(q.transfer_ns));
    t_dec_first.push_back(Ms(q.first_token_ns - q.decode_arrival_ns));
  }
  const int pre_gpus = ps.deployment.gpus * ps.deployment.replicas;
  const int dec_gpus = ds.deployment.gpus * ds.deployment.replicas;
  const SloLimits slo{ps.slo.ttft_ms, ps.slo.tpot_ms, ps.slo.e2el_ms};

  nlohmann::json s;
  s["scenario"] = pd.name;
  s["model"] = ps.model;
  s["hardware"] = ps.hardware;
  s["disaggregated"] = true;
  s["workload"] = pre_r->summary["workload"];
  // GPU-hours of both pools over the run, whether busy or not.
  const E2eTotals totals =
      AddEndToEndSummary(e2e, pre_gpus + dec_gpus, ps.usd_per_gpu_hour, slo, &s);
  const double duration = totals.duration_s;
  s["cost_usd_prefill_pool"] = ps.usd_per_gpu_hour * pre_gpus * duration / 3600.0;
  s["cost_usd_decode_pool"] = ps.usd_per_gpu_hour * dec_gpus * duration / 3600.0;

  nlohmann::json pools;
  pools["prefill"] = PoolSummary(pre_r->summary, ps.deployment, duration, t_pre);
  pools["decode"] = PoolSummary(dec_r->summary, ds.deployment, duration, t_dec_first);
  pools["prefill"]["time_in_pool_note"] = "queue + prefill, from arrival to prompt computed";
  pools["decode"]["time_in_pool_note"] =
      "decode queue (waiting for pages) + first decode step, from KV arrival to first token";
  s["pools"] = pools;
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
      "the prefill pool frees a prompt's KV when its prefill ends (no back-pressure from a full "
      "decode pool)",
      "decode pages are reserved on KV arrival, after the transfer, not before it",
      "layer-by-layer overlap assumes sending one layer's KV takes no longer than computing it"};
  out.summary = std::move(s);
  return out;
}

}  // namespace capplan
