// RunScenario: scenario -> model shard + memory plan (models/) -> KV pools,
// scheduler, memoized step pricer -> DES (sim/simulator.h) -> summary keys
// per sim/simulate.h (metric names as vLLM's and SGLang's serving
// benchmarks report them).
#include "sim/simulate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

#include "common/data_path.h"
#include "common/did_you_mean.h"
#include "common/json_util.h"
#include "common/memory_budget.h"
#include "hw/profile.h"
#include "models/engine_profile.h"
#include "models/engine_step_costs.h"
#include "models/memory.h"
#include "models/ops.h"
#include "sim/cost_model.h"
#include "sim/metrics.h"
#include "sim/pd/pd_run.h"
#include "sim/prediction_intervals.h"
#include "sim/prepared_run.h"
#include "sim/request_log.h"
#include "sim/scenario.h"
#include "sim/scheduler.h"
#include "sim/sim_state.h"
#include "sim/simulator.h"
#include "sim/step_pricer.h"

namespace capplan::sim {

namespace {

// The scenario's workload, read in place: a run holds one copy of its
// requests however many pools read them.
class WorkloadSource : public RequestSource {
 public:
  explicit WorkloadSource(const Workload* w) : w_(w) {}
  int64_t size() const override { return static_cast<int64_t>(w_->requests.size()); }
  SimRequestSpec At(int32_t idx) const override {
    const size_t i = static_cast<size_t>(idx);
    const RequestSpec& r = w_->requests[i];
    SimRequestSpec s{r.id, r.arrival_ns, r.input_tokens, r.output_tokens,
                     idx < w_->warmup_requests};
    if (i < w_->after.size()) {
      s.after = w_->after[i];
      s.think_ns = w_->think_ns[i];
    }
    return s;
  }

 private:
  const Workload* w_;
};

}  // namespace

struct PreparedRun::State {
  const Scenario* sc = nullptr;
  const PoolSpec* pool = nullptr;
  RunOptions options;
  models::ModelCard card;
  hw::HardwareProfile profile;
  models::ParallelLayout layout;
  std::optional<models::ShardedModel> sharded;
  std::optional<models::ShardedModel> draft;  // speculative decoding's draft model
  std::optional<models::MemoryPlan> plan;
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<ModelStepPricer> pricer;
  int64_t cgbs = 0;
  bool overlap = false;
  int64_t mrr = 0;
  SimConfig cfg;
  std::optional<WorkloadSource> requests;
};

PreparedRun::PreparedRun(std::unique_ptr<State> st) : st_(std::move(st)) {}
PreparedRun::~PreparedRun() = default;
const SimConfig& PreparedRun::config() const { return st_->cfg; }
const RequestSource& PreparedRun::requests() const { return *st_->requests; }
StepPricer& PreparedRun::pricer() { return *st_->pricer; }
const models::ModelCard& PreparedRun::card() const { return st_->card; }
const hw::HardwareProfile& PreparedRun::profile() const { return st_->profile; }
const models::ParallelLayout& PreparedRun::layout() const { return st_->layout; }
const models::ShardedModel& PreparedRun::sharded() const { return *st_->sharded; }
const CostModel& PreparedRun::cost() const { return *st_->cost; }
bool PreparedRun::nvls() const { return st_->plan->nvls; }

Result<std::unique_ptr<PreparedRun>> PrepareRun(const Scenario& sc, size_t pool,
                                                const RunOptions& options) {
  auto st = std::make_unique<PreparedRun::State>();
  st->sc = &sc;
  st->options = options;
  const PoolSpec& ps = sc.pools.at(pool);
  st->pool = &ps;
  const DeploymentSpec& d = ps.deployment;
  const std::string& origin = sc.origin;
  auto at = [&](const std::string& ptr, const Status& st) {
    return st.WithPrefix(origin + ": " + ptr);
  };
  auto card_r = models::LoadModelCard(sc.model);
  if (!card_r.ok()) return at("/model", card_r.status());
  st->card = std::move(*card_r);
  const models::ModelCard& card = st->card;
  auto prof_r = hw::LoadHardwareProfile(sc.hardware);
  if (!prof_r.ok()) return at("/hardware", prof_r.status());
  st->profile = std::move(*prof_r);
  const hw::HardwareProfile& profile = st->profile;

  models::ParallelLayout& layout = st->layout;
  layout.gpus = d.gpus;
  layout.tp = d.tp;
  layout.ep = d.ep;
  layout.dp_attention = d.dp_attention;
  layout.dp = d.dp_attention ? (d.dp > 0 ? d.dp : d.tp) : 1;
  models::PrecisionChoice choice;
  choice.weights = d.weights;
  choice.per_component = d.weights_per_component;
  choice.kv_cache = d.kv_cache;

  const models::EngineResolution* engine_r = &d.engine_resolution;
  auto sharded_r = models::ShardModel(card, layout, choice);
  if (!sharded_r.ok()) return at(ps.pointer, sharded_r.status());
  for (const auto& [sel, impl] : d.kernel_overrides) {
    if (profile.kernels.find(impl) == profile.kernels.end()) {
      std::vector<std::string> names;
      for (const auto& [n, t] : profile.kernels) names.push_back(n);
      return at(ps.pointer + "/kernels/" + sel,
                Status::Invalid("no kernel table '" + EchoValue(impl) + "' in profile " +
                                profile.name + DidYouMean(impl, names)));
    }
  }
  sharded_r->kernels = d.kernels;
  st->sharded.emplace(std::move(*sharded_r));
  const models::ShardedModel& sharded = *st->sharded;

  const models::EngineDefaults& ed = engine_r->profile->defaults;
  models::EngineMemoryOptions eng;
  eng.engine = d.engine;
  eng.version = d.engine_version;
  eng.mem_fraction = d.mem_fraction_static;
  eng.chunked_prefill_tokens = d.chunked_prefill_tokens;
  eng.cuda_graph_max_bs = d.cuda_graph_max_bs.value_or(0);
  eng.page_size = d.page_size;
  eng.nvls = d.nccl_nvls;
  const speculative::Spec& spec = d.speculative;
  if (spec.on()) {
    eng.draft = spec.method == speculative::Method::kMtp ? models::DraftKind::kMtp
                                                         : models::DraftKind::kEagle;
    eng.draft_layers = spec.draft_layers;
    auto draft_card = models::DraftCard(card, eng.draft, eng.draft_layers);
    if (!draft_card.ok()) return at(ps.pointer + "/speculative/method", draft_card.status());
    auto draft_r = models::ShardModel(*draft_card, layout, choice);
    if (!draft_r.ok()) return at(ps.pointer + "/speculative", draft_r.status());
    draft_r->kernels = d.kernels;
    st->draft.emplace(std::move(*draft_r));
  }
  // The context a "request that fits" is sized on: the workload's mean.
  int64_t mean_ctx = 1;
  if (!sc.workload.requests.empty()) {
    double s = 0;
    for (const auto& r : sc.workload.requests) s += r.input_tokens + r.output_tokens;
    mean_ctx = std::max<int64_t>(1, std::llround(s / sc.workload.requests.size()));
  }
  auto plan_r = models::PlanMemory(
      card, layout, choice, eng,
      models::DeviceMemory{profile.gpu_memory_bytes, profile.gpu_runtime_memory_bytes, &profile},
      mean_ctx);
  if (!plan_r.ok()) return at(ps.pointer, plan_r.status());
  st->plan.emplace(std::move(*plan_r));
  const models::MemoryPlan& plan = *st->plan;
  const int64_t cgbs = st->cgbs = plan.cuda_graph_max_bs;

  auto cost_r = d.cost_model_factory(profile);
  if (!cost_r.ok()) return at(ps.pointer + "/cost_model", cost_r.status());
  st->cost = std::move(*cost_r);
  const bool overlap = st->overlap = d.overlap_schedule.value_or(
      spec.on() ? ed.speculative_overlap_schedule : ed.overlap_schedule);
  ModelPricerOptions po;
  po.cuda_graphs = d.cuda_graphs;
  po.cuda_graph_max_bs = cgbs;
  po.overlap_schedule = overlap;
  po.nvls = plan.nvls;
  po.step_host_s = d.step_costs.host_s;
  po.cpu_schedule_s = d.step_costs.cpu_schedule_s;
  po.cpu_schedule_per_request_s = d.step_costs.cpu_schedule_per_request_s;
  po.kv_verify = d.kv_integrity == KvIntegrity::kVerify;
  po.page_size = plan.page_size;
  po.verify_tag_bytes_per_page_per_layer = profile.kv_verify_tag_bytes_per_page_per_layer;
  po.verify_kernels_per_step = static_cast<int64_t>(profile.kv_verify_kernels_per_step);
  if (spec.on()) {
    po.spec_draft_tokens = spec.draft_tokens();
    po.draft = &*st->draft;
  }
  SharedStepPrices* shared = nullptr;
  if (options.price_cache != nullptr) {
    // Everything this pool's prices depend on: the document but its
    // workload (model, hardware, deployment), the pool, the pricer options.
    nlohmann::json doc = sc.doc;
    doc.erase("workload");
    std::ostringstream fp;
    fp << DumpJson(doc) << "|pool " << pool << "|" << po.cuda_graphs << " " << po.cuda_graph_max_bs
       << " " << po.overlap_schedule << " " << po.step_host_s << " " << po.cpu_schedule_s << " "
       << po.cpu_schedule_per_request_s << " " << po.nvls << " " << po.kv_verify << " "
       << po.page_size << " " << po.verify_tag_bytes_per_page_per_layer << " "
       << po.verify_kernels_per_step;
    shared = options.price_cache->For(fp.str());
  }
  st->pricer = std::make_unique<ModelStepPricer>(&sharded, st->cost.get(), po, shared);

  SimConfig& cfg = st->cfg;
  cfg.scheduler = d.scheduler;
  cfg.router = d.router;
  cfg.replicas = d.replicas;
  cfg.ranks_per_replica = layout.AttentionRanks();
  cfg.kv_tokens_per_rank = plan.kv_tokens_per_rank;
  cfg.page_size = plan.page_size;
  // A concurrency cap spans the whole request: the pool where requests
  // enter and leave enforces it (with a prefill pool, the decode pool's
  // prealloc queue: sim/pd/pd_run.h), never a prefill pool.
  cfg.concurrency = ps.role == schema::PoolRole::kPrefill ? 0 : sc.workload.concurrency;
  cfg.want_trace = options.want_trace;
  cfg.fast_forward = options.fast_forward;
  cfg.progress = options.progress;
  cfg.sched.phase = d.phase;
  cfg.sched.chunked_prefill_tokens = plan.chunked_prefill_tokens;
  ApplyEngineScheduling(ed, &cfg.sched);
  cfg.sched.speculative = spec.acceptance;
  cfg.sched.seed = sc.workload.seed;
  int64_t& mrr = st->mrr;
  if (d.max_running_requests) {
    mrr = *d.max_running_requests;
  } else if (spec.on() && ed.speculative_max_running_requests > 0) {
    mrr = ed.speculative_max_running_requests;
  } else {
    const int64_t ctx_len = std::max<int64_t>(1, card.max_position_embeddings);
    mrr = ed.MaxRunningRequests(plan.kv_capacity_tokens, ctx_len);
  }
  // With DP attention the engine splits the cap over the ranks.
  cfg.sched.max_running_requests = std::max<int64_t>(1, mrr / cfg.ranks_per_replica);

  // Prefix caching matches content blocks; a workload without content
  // identity leaves nothing to match, so the pool runs without a cache.
  if (sc.workload.prefix_block_tokens > 0) {
    cfg.prefix_cache = d.prefix_cache.value_or(ed.prefix_cache);
    cfg.prefix_block_tokens = sc.workload.prefix_block_tokens;
    const Workload* w = &sc.workload;
    cfg.content = [w](int32_t idx, int64_t n_blocks, std::vector<int64_t>* out) {
      ContentBlocks(*w, idx, n_blocks, out);
    };
  }

  st->requests.emplace(&sc.workload);
  return std::make_unique<PreparedRun>(std::move(st));
}

RunResult PreparedRun::Summarize(const SimResult& sim, const RequestLog* streamed) const {
  const Scenario& sc = *st_->sc;
  const RunOptions& options = st_->options;
  const DeploymentSpec& d = st_->pool->deployment;
  const hw::HardwareProfile& profile = st_->profile;
  const models::ParallelLayout& layout = st_->layout;
  const models::MemoryPlan& plan = *st_->plan;
  const SimConfig& cfg = st_->cfg;
  const ModelStepPricer& pricer = *st_->pricer;
  const int64_t mrr = st_->mrr, cgbs = st_->cgbs;
  const bool overlap = st_->overlap;

  // ---- Summary ----
  const SloLimits slo{sc.slo.ttft_ms, sc.slo.tpot_ms, sc.slo.e2el_ms};
  std::optional<RequestLog> kept;
  if (streamed == nullptr) {
    kept.emplace(
        RequestLog::Options{.slo = slo, .expected = static_cast<int64_t>(sim.requests.size())});
    for (const ReqState& r : sim.requests) kept->OnRetired(r);
  }
  const RequestLog& log = streamed != nullptr ? *streamed : *kept;
  const int total_gpus = d.gpus * d.replicas;

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
  const E2eTotals totals = log.e2e().Summarize(total_gpus, sc.usd_per_gpu_hour, &s);
  s.itl = schema::Stats{sim.itl_ns.mean() / 1e6, sim.itl_ns.Percentile(50) / 1e6,
                        sim.itl_ns.Percentile(90) / 1e6, sim.itl_ns.Percentile(99) / 1e6};
  schema::PoolSummary& p = s.pools.emplace_back();
  p.role = schema::PoolRole::kBoth;
  p.deployment = {{"engine", d.engine},
                  {"engine_version", plan.engine_version},
                  {"gpus", d.gpus},
                  {"tp", d.tp},
                  {"ep", d.ep},
                  {"dp_attention", d.dp_attention},
                  {"attention_ranks", layout.AttentionRanks()},
                  {"replicas", d.replicas},
                  {"weights", d.weights},
                  {"kv_cache", models::DtypeName(d.kv_cache)},
                  {"page_size", plan.page_size},
                  {"kv_integrity", KvIntegrityName(d.kv_integrity)},
                  {"phase", PhaseName(d.phase)},
                  {"scheduler", cfg.scheduler},
                  {"router", d.router},
                  {"chunked_prefill_tokens", plan.chunked_prefill_tokens},
                  {"max_running_requests", mrr},
                  {"cuda_graphs", d.cuda_graphs},
                  {"cuda_graph_max_bs", cgbs},
                  {"overlap_schedule", overlap},
                  {"mem_fraction_static", plan.mem_fraction},
                  {"cost_model", d.cost_model},
                  {"memory_rule", plan.rule_source}};
  p.gpus = total_gpus;
  p.kv_capacity_tokens = sim.kv_capacity_tokens_per_replica;
  p.kv_bytes_per_token = plan.kv.bytes_per_token;
  p.peak_kv_tokens = sim.peak_kv_tokens;
  p.peak_kv_fraction =
      sim.kv_capacity_tokens_per_replica
          ? static_cast<double>(sim.peak_kv_tokens) / sim.kv_capacity_tokens_per_replica
          : 0.0;
  p.max_concurrent_requests = sim.max_concurrent_requests;
  p.max_running_requests_observed = sim.max_running_requests;
  p.retractions = sim.retractions;
  if (cfg.prefix_cache) {
    p.prefix_cache_hit_rate =
        sim.prefix_prompt_tokens > 0
            ? static_cast<double>(sim.prefix_hit_tokens) / static_cast<double>(sim.prefix_prompt_tokens)
            : 0.0;
    p.prefill_tokens_saved = sim.prefix_hit_tokens;
    p.cached_kv_tokens_peak = sim.prefix_cached_tokens_peak;
    p.prefix_cache_evicted_blocks = sim.prefix_evicted_blocks;
  }
  p.kv_bound = sim.kv_bound;
  schema::Memory& mem = p.memory.emplace();
  mem.weights_bytes_per_gpu = plan.weights.bytes_per_gpu;
  auto& comps = mem.weights_by_component_bytes.emplace();
  for (const auto& c : plan.weights.components) {
    comps[models::ComponentName(c.component)] = c.bytes_per_gpu + c.scale_bytes_per_gpu;
  }
  mem.reserve_bytes_per_gpu = plan.reserve_bytes_per_gpu;
  mem.kv_pool_bytes_per_gpu = plan.kv_pool_bytes_per_gpu;
  mem.gpu_memory_bytes = plan.gpu_memory_bytes;
  mem.mem_fraction_static = plan.mem_fraction;
  mem.mem_fraction_defaulted = plan.mem_fraction_defaulted;
  mem.kv_tokens_per_rank = plan.kv_tokens_per_rank;
  mem.kv_tokens_lo = plan.kv_tokens_lo;
  mem.kv_tokens_hi = plan.kv_tokens_hi;
  if (plan.draft_weights_bytes > 0) mem.draft_weights_bytes_per_gpu = plan.draft_weights_bytes;
  const StepCost& b = sim.busy;
  const double tot = b.seconds > 0 ? b.seconds : 1;
  auto& share = p.op_time_share.emplace();
  for (int i = 0; i < kNumOpClasses; ++i) {
    share[models::OpClassName(static_cast<models::OpClass>(i))] = b.class_seconds[i] / tot;
  }
  auto& bshare = p.bound_time_share.emplace();
  for (int i = 0; i < kNumBounds; ++i) bshare[BoundName(static_cast<Bound>(i))] = b.bound_seconds[i] / tot;
  p.kv_verify_time_share = b.verify_seconds / tot;
  if (const speculative::Spec& spec = d.speculative; spec.on()) {
    p.deployment["speculative"] = {
        {"method", speculative::MethodName(spec.method)},
        {"draft_tokens", spec.draft_tokens()},
        {"draft_layers", st_->draft->card.num_layers},
        {"acceptance", spec.acceptance.p},
        {"expected_accept_length", spec.acceptance.ExpectedTokensPerStep()}};
    p.accept_length_mean = sim.spec_decode_steps > 0
                               ? static_cast<double>(sim.spec_emitted_tokens) /
                                     static_cast<double>(sim.spec_decode_steps)
                               : 0.0;
    p.spec_verify_time_share = b.spec_verify_seconds / tot;
    p.spec_draft_time_share = b.draft_seconds / tot;
  }
  p.iterations = sim.iterations;
  p.busy_s = b.seconds;
  schema::SimulatorStats& st = p.simulator.emplace();
  st.step_cost_memo_hits = pricer.hits();
  st.step_cost_memo_misses = pricer.misses();
  st.fast_forward_iterations = sim.fast_forward_iterations;
  st.fast_forward_completions = sim.fast_forward_completions;
  st.context_bucket_relative_error = 1.0 / 512;
  st.itl_histogram_relative_error = 1.0 / 256;
  st.simulated_end_s = static_cast<double>(sim.end_ns) / 1e9;
  std::vector<std::string>& warnings = p.warnings.emplace();
  for (const auto& w : pricer.warnings()) warnings.push_back(w);
  if (totals.failed > 0) {
    warnings.push_back(std::to_string(totals.failed) +
                       " request(s) failed: they can never fit one attention rank's KV pool (" +
                       std::to_string(plan.kv_tokens_per_rank) + " tokens)");
  }
  if (sim.trace_truncated) warnings.push_back("trace truncated to the first iterations");

  RunResult out;
  out.summary = std::move(s);
  if (options.want_trace) {
    nlohmann::json ev = nlohmann::json::array();
    for (int i = 0; i < d.replicas; ++i) {
      ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", i},
                    {"args", {{"name", "replica " + std::to_string(i)}}}});
    }
    for (const auto& e : sim.trace_events) ev.push_back(e);
    out.trace = {{"traceEvents", ev}, {"displayTimeUnit", "ms"}};
  }
  return out;
}

namespace {

// Wall time of a simulation, one core, per request and per output token.
// Measured with bench/sim_bench (2026-12-01): iteration by iteration costs
// 9.5 ns per output token in a batch of 64 (BM_KimiClosedLoop_1M/0: 1.02e9
// tokens in 9.7 s) and 23 ns in a batch of about 8 (BM_LlamaTrace_100k/0:
// 2.56e7 tokens in 0.55-0.9 s); fast-forward costs about 0.5 us per
// request (BM_KimiClosedLoop_1M/1: 1e6 requests in 0.52 s) and 1.7 us per
// request of a trace (BM_LlamaTrace_100k/1). The constants round up: an
// estimate is meant to catch runs that would take hours, not to predict.
constexpr double kSecondsPerRequest = 3e-6;
constexpr double kSecondsPerTokenIterated = 25e-9;
constexpr double kSecondsPerTokenFastForward = 1e-9;

Status CheckRunTime(const Scenario& sc, const RunOptions& options) {
  double tokens = 0;
  for (const RequestSpec& r : sc.workload.requests) tokens += static_cast<double>(r.output_tokens);
  const double n = static_cast<double>(sc.workload.requests.size());
  const double per_token =
      options.fast_forward ? kSecondsPerTokenFastForward : kSecondsPerTokenIterated;
  const double estimate = n * kSecondsPerRequest + tokens * per_token * sc.pools.size();
  char what[160];
  std::snprintf(what, sizeof(what), "%s: simulating %.0f requests (%.3g output tokens)%s",
                sc.origin.c_str(), n, tokens,
                options.fast_forward ? "" : " iteration by iteration (--no-fast-forward)");
  return CheckTimeEstimate(estimate, what,
                           options.fast_forward
                               ? "simulate fewer requests (--set workload.num_requests=N)"
                               : "drop --no-fast-forward or simulate fewer requests");
}

}  // namespace

Result<RunResult> RunScenario(const Scenario& sc, const RunOptions& options) {
  CAPPLAN_RETURN_IF_ERROR(CheckRunTime(sc, options));
  // Pools linked by a KV transfer run on its protocol (sim/pd/pd_run.h).
  if (sc.transfer) return pd::RunLinkedPools(sc, options);
  CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<PreparedRun> prep, PrepareRun(sc, 0, options));
  // Requests stream out of the pool as they finish: the run holds only
  // those in flight (sim/request_log.h).
  std::ostringstream csv;
  RequestLog::Options lo{.slo = {sc.slo.ttft_ms, sc.slo.tpot_ms, sc.slo.e2el_ms},
                         .expected = prep->requests().size()};
  if (options.requests_csv_out != nullptr) {
    lo.csv = options.requests_csv_out;
  } else if (options.want_requests_csv) {
    lo.csv = &csv;
  }
  if (options.requests_out != nullptr) {
    options.requests_out->clear();
    lo.keep = options.requests_out;
  }
  RequestLog log(lo);
  SimConfig cfg = prep->config();
  cfg.sink = &log;
  auto sim_r = Simulate(cfg, prep->requests(), prep->pricer());
  if (!sim_r.ok()) return sim_r.status().WithPrefix(sc.origin);
  log.Flush();
  const int64_t n = prep->requests().size();
  if (log.passed() != n) {
    return Status::Internal(sc.origin +
                            ": simulator conservation violated: " + std::to_string(log.passed()) +
                            " of " + std::to_string(n) + " requests reached the summary");
  }
  // With nothing completed there is no throughput, latency or cost to
  // report; a summary would show a cost of $0 per million tokens.
  if (n > 0 && log.e2e().failed() == n) {
    return Status::Invalid(sc.origin + ": /workload: all " + std::to_string(n) +
                           " requests failed: none fits one attention rank's KV pool (" +
                           std::to_string(prep->config().kv_tokens_per_rank) +
                           " tokens); shorten the requests, use an fp8 KV cache or more "
                           "memory per rank");
  }
  RunResult r = prep->Summarize(*sim_r, &log);
  if (lo.csv == &csv) r.requests_csv = std::move(csv).str();
  CAPPLAN_RETURN_IF_ERROR(AddPredictionIntervals(&r.summary));
  return r;
}

}  // namespace capplan::sim
