#include "sim/run_driver.h"

#include <sstream>

#include "sim/prediction_intervals.h"
#include "sim/scenario.h"
#include "sim/steady_state.h"

namespace capplan::sim {

namespace {

// Where one pool's requests go as they leave it: its tally, the link, and
// (the exit pool's) the run's request log.
class PoolExit : public RequestSink {
 public:
  PoolExit(size_t pool, PoolLink* link, RequestSink* next) : pool_(pool), link_(link), next_(next) {}
  void OnRetired(const ReqState& r) override {
    CountLeft(r, &tally_);
    if (link_ != nullptr && link_->OnLeft(pool_, r)) ++tally_.failed_here;
    if (next_ != nullptr) next_->OnRetired(r);
  }
  const PoolTally& tally() const { return tally_; }

 private:
  size_t pool_;
  PoolLink* link_;
  RequestSink* next_;
  PoolTally tally_;
};

// The pools of one run, prepared, and where their requests go.
struct Pools {
  std::vector<std::unique_ptr<PreparedRun>> prepared;
  std::vector<std::unique_ptr<ServingPool>> pools;
  std::vector<ServingPool*> raw;
  std::vector<PoolExit> exits;
  std::vector<SimResult> results;
};

Result<Pools> PreparePools(const Scenario& sc, const RunOptions& options) {
  Pools p;
  RunOptions pool_options = options;
  // Linked pools: the link draws the trace (one track per stage).
  if (sc.pools.size() > 1) pool_options.want_trace = false;
  for (size_t i = 0; i < sc.pools.size(); ++i) {
    CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<PreparedRun> prep, PrepareRun(sc, i, pool_options));
    p.prepared.push_back(std::move(prep));
  }
  return p;
}

std::string PoolName(const Scenario& sc, size_t i) {
  if (sc.pools.size() == 1) return sc.origin;
  return std::string(schema::PoolRoleName(sc.pools[i].role)) + " pool";
}

// The pools on one queue, each handing its leaving requests to its exit.
Status StartPools(const Scenario& sc, PoolLink* link, RequestLog* log, size_t exit_pool,
                  EventQueue* queue, Pools* p) {
  p->exits.reserve(p->prepared.size());
  for (size_t i = 0; i < p->prepared.size(); ++i) {
    p->exits.emplace_back(i, link, i == exit_pool ? log : nullptr);
  }
  for (size_t i = 0; i < p->prepared.size(); ++i) {
    SimConfig cfg = p->prepared[i]->config();
    cfg.sink = &p->exits[i];
    auto pool = ServingPool::Create(static_cast<uint8_t>(i), cfg, p->prepared[i]->requests(),
                                    p->prepared[i]->pricer(), queue,
                                    link != nullptr ? link->OptionsFor(i) : PoolOptions{}, link);
    if (!pool.ok()) return pool.status().WithPrefix(PoolName(sc, i));
    p->raw.push_back(pool->get());
    p->pools.push_back(std::move(*pool));
  }
  if (link != nullptr) link->Attach(p->raw, queue);
  return Status::Ok();
}

Status FinishPools(const Scenario& sc, int64_t end_ns, Pools* p) {
  for (size_t i = 0; i < p->pools.size(); ++i) {
    auto res = p->pools[i]->TakeResult(end_ns);
    if (!res.ok()) return res.status().WithPrefix(PoolName(sc, i));
    const int64_t n = p->prepared[i]->requests().size();
    if (p->exits[i].tally().left != n) {
      return Status::Internal(PoolName(sc, i) + ": simulator conservation violated: " +
                              std::to_string(p->exits[i].tally().left) + " of " +
                              std::to_string(n) + " requests left the pool");
    }
    p->results.push_back(std::move(*res));
  }
  return Status::Ok();
}

RequestLog::Options LogOptions(const Scenario& sc, const RunOptions& options,
                               const PoolLink* link, int64_t n, std::ostream* csv) {
  RequestLog::Options lo{.slo = {sc.slo.ttft_ms, sc.slo.tpot_ms, sc.slo.e2el_ms},
                         .expected = n,
                         .ttft_split = TtftSplitOf(sc)};
  if (options.requests_csv_out != nullptr) {
    lo.csv = options.requests_csv_out;
  } else if (options.want_requests_csv) {
    lo.csv = csv;
  }
  if (link != nullptr && lo.csv != nullptr) {
    lo.csv_header = link->CsvHeader();
    lo.csv_row = [link](std::string* out, const ReqState& r) { link->AppendCsvRow(out, r); };
  }
  if (options.requests_out != nullptr) {
    options.requests_out->clear();
    lo.keep = options.requests_out;
  }
  return lo;
}

Status NoneCompleted(const Scenario& sc, const Pools& p, const PoolLink* link, int64_t n) {
  if (link != nullptr) return Status::Invalid(sc.origin + ": /workload: " + link->NoneCompleted(n));
  return Status::Invalid(sc.origin + ": /workload: all " + std::to_string(n) +
                         " requests failed: none fits one attention rank's KV pool (" +
                         std::to_string(p.prepared[0]->config().kv_tokens_per_rank) +
                         " tokens); shorten the requests, use an fp8 KV cache or more "
                         "memory per rank");
}

// What pool i's host KV tier adds to each of its GPU-hours (0 without a
// tier or a price), and a note saying whether the cost counts it.
double HostTierUsdPerGpuHour(const Scenario& sc, size_t i, schema::RunSummary* s) {
  if (i >= sc.pools.size()) return 0;
  const KvTiersSpec& t = sc.pools[i].deployment.kv_tiers;
  if (!t.has_host()) return 0;
  if (!sc.host_memory_usd_per_gib_hour) {
    s->notes["host_memory_cost"] =
        "the host KV tier's memory is not in the cost: set cost.host_memory_usd_per_gib_hour";
    return 0;
  }
  s->notes["host_memory_cost"] =
      "the cost includes each GPU's host KV tier (deployment.kv_tiers gib_per_gpu) at "
      "cost.host_memory_usd_per_gib_hour";
  return t.host_gib_per_gpu * *sc.host_memory_usd_per_gib_hour;
}

}  // namespace

E2eAccumulator::TtftSplit TtftSplitOf(const Scenario& sc) {
  using Split = E2eAccumulator::TtftSplit;
  if (sc.pools.size() != 1) return Split::kNone;
  return sc.pools[0].deployment.kv_tiers.has_host() ? Split::kQueuePrefillLoad
                                                    : Split::kQueuePrefill;
}

void CountLeft(const ReqState& r, PoolTally* t) {
  ++t->left;
  if (r.status != ReqStatus::kDone) {
    ++t->failed;
  } else if (!r.warmup) {
    ++t->completed;
  }
}

schema::RunSummary SummarizeRun(const Scenario& sc, const hw::HardwareProfile& profile,
                                const RequestLog& log, const SimResult& exit,
                                std::vector<schema::PoolSummary> pools) {
  schema::RunSummary s;
  s.scenario = sc.name;
  s.model = sc.model;
  s.hardware = sc.hardware;
  s.profile.emplace();
  s.profile->name = profile.name;
  s.profile->path = profile.path;
  s.profile->provenance = nlohmann::json::object();
  for (const auto& [k, v] : profile.provenance) s.profile->provenance[k] = v.kind;
  s.workload = {{"kind", sc.workload.kind},
                {"concurrency", sc.workload.concurrency},
                {"num_requests", static_cast<int64_t>(sc.workload.requests.size())},
                {"warmup_requests", sc.workload.warmup_requests},
                {"description", DescribeWorkload(sc.workload)}};
  int gpus = 0;
  for (const schema::PoolSummary& p : pools) gpus += p.gpus.value_or(0);
  // GPU-hours of every pool over the run, whether busy or not, each GPU's
  // host KV tier memory with it when priced.
  const double gpu_rate = sc.usd_per_gpu_hour.value_or(profile.usd_per_gpu_hour);
  std::vector<double> pool_rate(pools.size(), gpu_rate);
  double usd_per_hour = 0;
  for (size_t i = 0; i < pools.size(); ++i) {
    pool_rate[i] += HostTierUsdPerGpuHour(sc, i, &s);
    usd_per_hour += pool_rate[i] * pools[i].gpus.value_or(0);
  }
  const double usd_per_gpu_hour = gpus > 0 ? usd_per_hour / gpus : gpu_rate;
  const E2eTotals totals = log.e2e().Summarize(gpus, usd_per_gpu_hour, &s);
  s.itl = StatsOfNs(exit.itl_ns);
  if (pools.size() > 1) {
    for (size_t i = 0; i < pools.size(); ++i) {
      pools[i].cost_usd = pool_rate[i] * pools[i].gpus.value_or(0) * totals.duration_s / 3600.0;
    }
  }
  s.pools = std::move(pools);
  AddSteadyStateCheck(sc.workload, totals, &s);
  AddEnergySummary(sc.energy, &s);
  return s;
}

Result<PoolsRun> RunPools(const Scenario& sc, const RunOptions& options) {
  CAPPLAN_ASSIGN_OR_RETURN(Pools p, PreparePools(sc, options));
  PoolsRun run;
  if (!sc.pool_link.empty()) {
    auto make = PoolLinks().Find(sc.pool_link);
    if (!make.ok()) return make.status().WithPrefix(sc.origin);
    CAPPLAN_ASSIGN_OR_RETURN(run.link, (*make)(sc, p.prepared));
  }
  PoolLink* link = run.link.get();
  const size_t exit_pool = link != nullptr ? link->exit_pool() : 0;
  const int64_t n = p.prepared[exit_pool]->requests().size();
  std::ostringstream csv;
  RequestLog log(LogOptions(sc, options, link, n, &csv));
  EventQueue queue;
  CAPPLAN_RETURN_IF_ERROR(StartPools(sc, link, &log, exit_pool, &queue, &p));
  const int64_t end_ns = RunEventLoop(queue, p.raw, p.raw[exit_pool], link,
                                      {.progress = options.progress, .exit_pool = p.raw[exit_pool]});
  CAPPLAN_RETURN_IF_ERROR(FinishPools(sc, end_ns, &p));
  log.Flush();
  if (link != nullptr) CAPPLAN_RETURN_IF_ERROR(link->Check());
  if (n > 0 && log.e2e().failed() == n) run.completions = NoneCompleted(sc, p, link, n);

  std::vector<schema::PoolSummary> parts;
  for (size_t i = 0; i < p.prepared.size(); ++i) {
    parts.push_back(p.prepared[i]->SummarizePool(p.results[i], p.exits[i].tally(), link != nullptr));
  }
  RunResult& r = run.result;
  r.summary = SummarizeRun(sc, p.prepared[0]->profile(), log, p.results[exit_pool],
                           std::move(parts));
  if (link != nullptr) {
    link->AddToSummary(&r.summary);
    if (options.want_trace) r.trace = link->Trace();
  } else if (options.want_trace) {
    r.trace = p.prepared[0]->ReplicaTrace(p.results[0]);
  }
  if (options.want_requests_csv && options.requests_csv_out == nullptr) {
    r.requests_csv = std::move(csv).str();
  }
  CAPPLAN_RETURN_IF_ERROR(AddPredictionIntervals(&r.summary));
  if (sc.calibration) ApplyOverlayBands(*sc.calibration->overlay, &r.summary);
  return run;
}

}  // namespace capplan::sim
