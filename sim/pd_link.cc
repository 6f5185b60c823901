#include "sim/pd_link.h"

#include "hw/profile.h"
#include "models/card.h"
#include "sim/event_queue.h"
#include "sim/metrics.h"
#include "sim/pd/sender_links.h"
#include "sim/pool_link.h"
#include "sim/prepared_run.h"
#include "sim/request_csv.h"
#include "sim/scenario.h"
#include "sim/serving_pool.h"
#include "sim/sim_state.h"

namespace capplan::sim::pd {

namespace {

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

std::string NoneCompletedMessage(int64_t n) {
  return "all " + std::to_string(n) +
         " requests failed: none fits the KV pools (prefill and decode); "
         "shorten the requests, use an fp8 KV cache or more memory per rank";
}

constexpr char kCsvHeader[] =
    "id,arrival_ms,prefill_done_ms,transfer_ms,decode_arrival_ms,first_token_ms,finish_ms,"
    "input_tokens,output_tokens,ttft_ms,e2el_ms,warmup,status,reserve_ms,prefill_admit_ms,"
    "decode_admit_ms\n";

void AppendRow(std::string* out, const PdRequest& q) {
  auto ms = [out](double v) {
    AppendCsvMs(out, v);
    out->push_back(',');
  };
  auto num = [out](int64_t v) {
    AppendCsvInt(out, v);
    out->push_back(',');
  };
  num(q.id);
  ms(Ms(q.arrival_ns));
  ms(Ms(q.prefill_done_ns));
  ms(Ms(q.transfer_ns));
  ms(Ms(q.decode_arrival_ns));
  ms(Ms(q.first_token_ns));
  ms(Ms(q.finish_ns));
  num(q.input);
  num(q.generated);
  ms(q.done ? Ms(q.first_token_ns - q.arrival_ns) : 0);
  ms(q.done ? Ms(q.finish_ns - q.arrival_ns) : 0);
  num(q.warmup ? 1 : 0);
  out->append(q.done ? "completed," : "failed,");
  ms(Ms(q.reserve_ns));
  ms(Ms(q.prefill_admit_ns));
  AppendCsvMs(out, Ms(q.decode_admit_ns));
  out->push_back('\n');
}

// Where each completed request's TTFT went (sim/pd/README.md), in ms.
struct StageTimes {
  std::vector<double> pre, xfer, dec_first, reserve, pre_queue, prefill, dec_queue, first_step;
  explicit StageTimes(const std::vector<PdRequest>& reqs) {
    for (const PdRequest& q : reqs) {
      if (q.warmup || !q.done) continue;
      pre.push_back(Ms(q.prefill_done_ns - q.arrival_ns));
      xfer.push_back(Ms(q.transfer_ns));
      dec_first.push_back(Ms(q.first_token_ns - q.decode_arrival_ns));
      reserve.push_back(Ms(q.reserve_ns - q.arrival_ns));
      pre_queue.push_back(Ms(q.prefill_admit_ns - q.reserve_ns));
      prefill.push_back(Ms(q.prefill_done_ns - q.prefill_admit_ns));
      dec_queue.push_back(Ms(q.decode_admit_ns - q.decode_arrival_ns));
      first_step.push_back(Ms(q.first_token_ns - q.decode_admit_ns));
    }
  }
};

schema::Transfer TransferSummary(const KvTransferPlan& tp, const std::vector<double>& exposed_ms) {
  schema::Transfer t;
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
  // A hand-set link is reported as given; a derived one also says why and
  // who sends, since the reader did not choose it.
  if (tp.route.derived) {
    t.placement = tp.route.placement;
    t.senders_per_request = tp.route.senders;
    t.receivers_per_request = tp.route.receivers;
    t.link_bytes_per_token = tp.link_bytes_per_token;
  }
  t.exposed_transfer = StatsOf(exposed_ms);
  return t;
}

// The PD protocol between the two pools (sim/pd/README.md "Protocol"): the
// pools report reservations, held prompts and failures; the link sends
// reserved requests to the prefill pool and times the transfers.
class KvLink : public PoolLink {
 public:
  KvLink(const Scenario& sc, size_t pre, size_t dec, const KvTransferPlan& tp)
      : sc_(sc), pre_i_(pre), dec_i_(dec), tp_(tp), reqs_(sc.workload.requests.size()) {}
  const std::vector<PdRequest>& requests() const { return reqs_; }
  const KvTransferPlan& plan() const { return tp_; }

  PoolOptions OptionsFor(size_t i) const override {
    if (i == pre_i_) return {.hold_kv_after_prefill = true};
    return {.reserve_before_admit = true};
  }
  // The decode pool is where a request enters (its prealloc queue) and
  // leaves, so the workload's concurrency cap is enforced there, end to end
  // (PrepareRun gives a prefill pool none).
  size_t exit_pool() const override { return dec_i_; }
  void Attach(std::span<ServingPool* const> pools, EventQueue* queue) override {
    pre_ = pools[pre_i_];
    dec_ = pools[dec_i_];
    q_ = queue;
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
    const ReqState r = pre_->request(idx);
    const int64_t sender = int64_t{r.instance} << 32 | static_cast<uint32_t>(r.rank);
    const int64_t admit = r.admit_ns >= 0 ? r.admit_ns : now_ns;
    q.transfer_ns = senders_.Send(sender, r.input, admit, now_ns);
    q_->Push(now_ns + q.transfer_ns, EventClass::kTransferDone, idx);
  }
  void OnFailed(int pool, int32_t idx, int64_t now_ns) override {
    if (static_cast<size_t>(pool) == pre_i_) {
      dec_->Abandon(idx, now_ns);  // give back its decode reservation
    } else if (pre_->status(idx) == ReqStatus::kPending) {
      pre_->Abandon(idx, now_ns);  // failed at reservation: never reaches prefill
    }
  }

  bool OnLeft(size_t i, const ReqState& r) override {
    PdRequest& q = reqs_[static_cast<size_t>(r.idx)];
    const bool failed = r.status == ReqStatus::kFailed;
    if (i == pre_i_) {
      q.prefill_admit_ns = r.admit_ns;
      q.prefilled = r.status == ReqStatus::kDone;
      // Failed in the prefill pool (its reservation then given back, the
      // KV never sent), not at the decode reservation.
      return failed && q.reserve_ns >= 0;
    }
    q.id = r.id;
    q.input = r.input;
    q.output = r.output;
    q.warmup = r.warmup;
    q.arrival_ns = r.arrival_ns;  // the send time (TTFT origin): entering the decode prealloc queue
    q.decode_admit_ns = r.admit_ns;
    q.first_token_ns = r.first_token_ns;
    q.finish_ns = r.finish_ns;
    q.generated = r.generated;
    q.done = r.status == ReqStatus::kDone;
    // Failed at the decode reservation or while decoding.
    return failed && (q.reserve_ns < 0 || q.decode_arrival_ns >= 0);
  }

  const char* CsvHeader() const override { return kCsvHeader; }
  void AppendCsvRow(std::string* out, const ReqState& r) const override {
    AppendRow(out, reqs_[static_cast<size_t>(r.idx)]);
  }

  // A completed request was prefilled and its prefill pages released (each
  // pool checked its own pages and requests).
  Status Check() const override {
    for (const PdRequest& q : reqs_) {
      if (q.done && (!q.prefilled || q.decode_arrival_ns < q.prefill_done_ns ||
                     q.reserve_ns < q.arrival_ns)) {
        return Status::Internal("PD conservation violated: request " + std::to_string(q.id) +
                                " completed in the decode pool without a released prefill");
      }
    }
    return Status::Ok();
  }

  void AddToSummary(schema::RunSummary* s) const override;
  nlohmann::json Trace() const override;
  std::string NoneCompleted(int64_t n) const override { return NoneCompletedMessage(n); }

 private:
  const Scenario& sc_;
  size_t pre_i_, dec_i_;
  KvTransferPlan tp_;
  SenderLinks senders_{tp_};
  std::vector<PdRequest> reqs_;
  EventQueue* q_ = nullptr;
  ServingPool* pre_ = nullptr;
  ServingPool* dec_ = nullptr;
};

void KvLink::AddToSummary(schema::RunSummary* s) const {
  const StageTimes t(reqs_);
  schema::PoolSummary& pre = s->pools.at(pre_i_);
  schema::PoolSummary& dec = s->pools.at(dec_i_);
  pre.name = sc_.pools[pre_i_].name;
  pre.role = sc_.pools[pre_i_].role;
  dec.name = sc_.pools[dec_i_].name;
  dec.role = sc_.pools[dec_i_].role;
  pre.stages["time_in_pool"] = StatsOf(t.pre);
  dec.stages["time_in_pool"] = StatsOf(t.dec_first);
  pre.notes["time_in_pool"] =
      "wait for a decode reservation + prefill queue + prefill, from arrival to prompt computed";
  dec.notes["time_in_pool"] = "decode queue + first decode step, from KV arrival to first token";
  dec.stages["reservation_wait"] = StatsOf(t.reserve);
  pre.stages["prefill_queue"] = StatsOf(t.pre_queue);
  pre.stages["prefill"] = StatsOf(t.prefill);
  dec.stages["decode_queue"] = StatsOf(t.dec_queue);
  dec.stages["first_decode_step"] = StatsOf(t.first_step);
  pre.notes["peak_transfer_pages"] =
      "pages of computed prompts held until their KV transfer completes (all ranks)";
  dec.notes["peak_transfer_pages"] =
      "pages reserved for prompts whose KV has not arrived yet (all ranks)";
  s->notes["ttft_decomposition"] =
      "ttft = pools.decode.reservation_wait + pools.prefill.prefill_queue + pools.prefill.prefill "
      "+ transfer.exposed_transfer + pools.decode.decode_queue + pools.decode.first_decode_step";
  s->transfer = TransferSummary(tp_, t.xfer);
  s->model_limits = std::vector<std::string>{
      "layer-by-layer overlap: a prompt's KV is sendable from its admission on at the link's "
      "full rate, not layer by layer as each layer finishes",
      "transfers from one prefill rank queue on its link; several prefill ranks sending to one "
      "decode rank do not contend at the receiver",
      "the first token is not sampled by the prefill pool: it comes from the first decode step "
      "after the KV arrives",
      "a retracted decode request's KV goes to host memory and back without a priced copy"};
}

// One track per stage (prefill pool, transfer, decode pool), one span per
// request per stage: shows where requests wait.
nlohmann::json KvLink::Trace() const {
  nlohmann::json ev = nlohmann::json::array();
  const char* names[4] = {"decode reservation wait", "prefill pool (queue + prefill)",
                          "kv transfer (prefill pool holds the KV)",
                          "decode pool (queue + decode)"};
  for (int i = 0; i < 4; ++i) {
    ev.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", i}, {"args", {{"name", names[i]}}}});
  }
  for (const auto& q : reqs_) {
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

}  // namespace

Result<std::unique_ptr<PoolLink>> MakeKvLink(
    const Scenario& sc, const std::vector<std::unique_ptr<PreparedRun>>& pools) {
  size_t pre_i = sc.pools.size(), dec_i = sc.pools.size();
  for (size_t i = 0; i < sc.pools.size(); ++i) {
    if (sc.pools[i].role == schema::PoolRole::kPrefill) pre_i = i;
    if (sc.pools[i].role == schema::PoolRole::kDecode) dec_i = i;
  }
  if (pre_i == sc.pools.size() || dec_i == sc.pools.size() || !sc.transfer ||
      pools.size() != sc.pools.size()) {
    return Status::Internal(sc.origin +
                            ": a linked run needs a prefill pool, a decode pool and "
                            "a transfer");
  }
  // Bytes per decode attention rank: the decode pool's card, layout and
  // profile, as PrepareRun derived them; the route from both pools' layouts.
  const PreparedRun& dec = *pools[dec_i];
  const PoolFabric pre_fabric{pools[pre_i]->layout(), sc.pools[pre_i].deployment.replicas};
  const PoolFabric dec_fabric{dec.layout(), sc.pools[dec_i].deployment.replicas};
  auto route = RouteKv(pre_fabric, dec_fabric, dec.card().attention == models::AttentionKind::kMla,
                       sc.transfer->link, dec.profile());
  if (!route.ok()) return route.status().WithPrefix(sc.origin + ": /pd");
  auto plan_r =
      PlanKvTransfer(dec.card(), dec.layout(), sc.pools[pre_i].deployment.kv_cache,
                     sc.pools[dec_i].deployment.kv_cache, *sc.transfer, dec.profile(), &*route);
  if (!plan_r.ok()) return plan_r.status().WithPrefix(sc.origin + ": /pd/transfer");
  return std::unique_ptr<PoolLink>(std::make_unique<KvLink>(sc, pre_i, dec_i, *plan_r));
}

const std::vector<PdRequest>& KvLinkRequests(const PoolLink& link) {
  return static_cast<const KvLink&>(link).requests();
}

const KvTransferPlan& KvLinkPlan(const PoolLink& link) {
  return static_cast<const KvLink&>(link).plan();
}

}  // namespace capplan::sim::pd
