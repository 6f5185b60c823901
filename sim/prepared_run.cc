// PrepareRun: scenario pool -> model shard + memory plan (models/) -> cost
// model, memoized step pricer and simulator config (the pool's part of the
// summary: prepared_run_summary.cc).
#include "sim/prepared_run.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "common/did_you_mean.h"
#include "common/json_util.h"
#include "models/engine_profile.h"
#include "models/expert_parallel.h"
#include "models/hybrid_pools.h"
#include "models/memory.h"
#include "models/ops.h"
#include "sim/cost_model.h"
#include "sim/prepared_run_state.h"
#include "sim/scenario.h"
#include "sim/scheduler.h"

namespace capplan::sim {

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
int PreparedRun::gpus() const { return st_->deployment().gpus * st_->deployment().replicas; }

namespace {

using State = PreparedRun::State;

Status LoadCardAndProfile(State* st) {
  auto card_r = models::LoadModelCard(st->sc->model);
  if (!card_r.ok()) return st->At("/model", card_r.status());
  st->card = std::move(*card_r);
  auto prof_r = hw::LoadHardwareProfile(st->sc->hardware);
  if (!prof_r.ok()) return st->At("/hardware", prof_r.status());
  st->profile = std::move(*prof_r);
  if (!st->sc->usd_per_gpu_hour && st->profile.usd_per_gpu_hour <= 0) {
    return st->At("/cost/usd_per_gpu_hour",
                  Status::Invalid("hardware profile " + st->profile.name +
                                  " gives no GPU price (no price block); set "
                                  "cost.usd_per_gpu_hour in the scenario"));
  }
  return Status::Ok();
}

// A power limit needs the profile's power model and must lie between its
// idle and board power.
Status CheckPowerLimit(const State& st) {
  const std::optional<double>& limit = st.deployment().power_limit_w;
  if (!limit) return Status::Ok();
  const hw::PowerModel& pm = st.profile.power;
  const std::string at = st.pool->pointer + "/power_limit_w";
  if (!pm.present) {
    return st.At(at, Status::Invalid("hardware profile " + st.profile.name +
                                     " has no power block; remove power_limit_w or add one "
                                     "(calibrate/PROFILE.md)"));
  }
  if (*limit <= pm.idle_w.value || *limit > pm.tdp_w.value) {
    const auto watts = [](double w) { return std::to_string(static_cast<int>(w)) + " W"; };
    return st.At(at, Status::Invalid("must be above the idle power (" + watts(pm.idle_w.value) +
                                     ") and at most the board limit (" + watts(pm.tdp_w.value) +
                                     ") of " + st.profile.name));
  }
  return Status::Ok();
}

// Every kernel table the deployment names must be the profile's.
Status CheckKernelOverrides(const State& st) {
  const PoolSpec& ps = *st.pool;
  // A launch backend runs only on the architectures its engine names.
  for (const auto& [field, name] : ps.deployment.launch_backends) {
    const models::EngineProfile* engine = ps.deployment.engine_resolution.profile;
    const models::LaunchBackend& b = engine->launch_backends.at(field).choices.at(name);
    const auto& archs = b.architectures;
    if (archs.empty() ||
        std::find(archs.begin(), archs.end(), st.profile.architecture) != archs.end()) {
      continue;
    }
    std::string list;
    for (const std::string& a : archs) list += (list.empty() ? "" : ", ") + a;
    return st.At(ps.pointer + "/" + field,
                 Status::Invalid(ps.deployment.engine + " " +
                                 ps.deployment.engine_resolution.version + " " +
                                 models::LaunchBackendNoun(field) + " '" + name + "' runs on " +
                                 list + " only (models/engines/" + ps.deployment.engine +
                                 ".json); " + st.profile.name + " is " + st.profile.architecture +
                                 ": choose another backend or leave the field out"));
  }
  for (const auto& [sel, impl] : ps.deployment.kernel_overrides) {
    if (st.profile.kernels.find(impl) != st.profile.kernels.end()) continue;
    std::vector<std::string> names;
    for (const auto& [n, t] : st.profile.kernels) names.push_back(n);
    return st.At(ps.pointer + "/kernels/" + sel,
                 Status::Invalid("no kernel table '" + EchoValue(impl) + "' in profile " +
                                 st.profile.name + DidYouMean(impl, names)));
  }
  return Status::Ok();
}

// The engine's kernels on this GPU's architecture, with the deployment's
// own choices over them.
Result<models::KernelChoices> KernelsForGpu(const State& st) {
  const DeploymentSpec& d = st.pool->deployment;
  const models::EngineProfile* engine = d.engine_resolution.profile;
  if (engine == nullptr || engine->kernel_names_by_architecture.empty()) return d.kernels;
  std::map<std::string, std::string> names = models::WithLaunchBackendKernels(
      engine->KernelNamesFor(st.profile.architecture), d.LaunchBackendChoices());
  for (const auto& [sel, impl] : d.kernel_overrides) names[sel] = impl;
  return models::KernelChoices::FromSelectors(names);
}

// The layout's rules the card and the profile decide, each error at the
// deployment field its message starts with ("node_link: ...").
Status CheckLayoutFabric(const State& st) {
  Status s = models::CheckExpertPlacement(st.card, st.layout);
  const models::EngineProfile* engine = st.pool->deployment.engine_resolution.profile;
  if (s.ok() && engine != nullptr) s = models::CheckExpertSplit(st.card, st.layout, *engine);
  if (s.ok()) s = models::CheckFabric(st.layout, st.profile);
  if (s.ok()) return s;
  const std::string& m = s.message();
  const size_t colon = m.find(": ");
  if (colon == std::string::npos) return st.At(st.pool->pointer, s);
  return st.At(st.pool->pointer + "/" + m.substr(0, colon), Status::Invalid(m.substr(colon + 2)));
}

// The model (and speculative decoding's draft) as one GPU of the pool runs it.
Status ShardPoolModel(State* st) {
  const DeploymentSpec& d = st->deployment();
  st->layout = ParallelLayoutOf(d);
  const models::ParallelLayout& layout = st->layout;
  CAPPLAN_RETURN_IF_ERROR(CheckLayoutFabric(*st));
  st->choice.weights = d.weights;
  st->choice.per_component = d.weights_per_component;
  st->choice.kv_cache = d.kv_cache;
  auto sharded_r = models::ShardModel(st->card, layout, st->choice);
  if (!sharded_r.ok()) return st->At(st->pool->pointer, sharded_r.status());
  CAPPLAN_RETURN_IF_ERROR(CheckKernelOverrides(*st));
  CAPPLAN_RETURN_IF_ERROR(CheckPowerLimit(*st));
  auto kernels = KernelsForGpu(*st);
  if (!kernels.ok()) return st->At(st->pool->pointer + "/kernels", kernels.status());
  sharded_r->kernels = *kernels;
  // A hybrid's linear layers keep their state as the engine version does.
  const models::EngineProfile* engine = d.engine_resolution.profile;
  if (engine != nullptr) {
    sharded_r->linear_state = models::LinearStateFormatOf(engine->memory.hybrid);
    sharded_r->mla_absorbed_prefix = engine->defaults.mla_absorbed_prefix;
  }
  st->sharded.emplace(std::move(*sharded_r));
  const speculative::Spec& spec = d.speculative;
  if (!spec.on()) return Status::Ok();
  const models::DraftKind kind = spec.method == speculative::Method::kMtp
                                     ? models::DraftKind::kMtp
                                     : models::DraftKind::kEagle;
  auto draft_card = models::DraftCard(st->card, kind, spec.draft_layers);
  if (!draft_card.ok())
    return st->At(st->pool->pointer + "/speculative/method", draft_card.status());
  auto draft_r = models::ShardModel(*draft_card, layout, st->choice);
  if (!draft_r.ok()) return st->At(st->pool->pointer + "/speculative", draft_r.status());
  draft_r->kernels = *kernels;
  draft_r->linear_state = st->sharded->linear_state;
  draft_r->mla_absorbed_prefix = st->sharded->mla_absorbed_prefix;
  st->draft.emplace(std::move(*draft_r));
  return Status::Ok();
}

// The context a "request that fits" is sized on: the workload's mean.
int64_t MeanContext(const Workload& w) {
  if (w.requests.empty()) return 1;
  double s = 0;
  for (const auto& r : w.requests) s += r.input_tokens + r.output_tokens;
  return std::max<int64_t>(1, std::llround(s / w.requests.size()));
}

Status PlanPoolMemory(State* st) {
  const DeploymentSpec& d = st->deployment();
  models::EngineMemoryOptions eng;
  eng.engine = d.engine;
  eng.version = d.engine_version;
  eng.mem_fraction = d.mem_fraction_static;
  eng.chunked_prefill_tokens = d.chunked_prefill_tokens;
  eng.cuda_graph_max_bs = d.cuda_graph_max_bs.value_or(0);
  eng.page_size = d.page_size;
  eng.nvls = d.nccl_nvls;
  if (d.speculative.on()) {
    eng.draft = d.speculative.method == speculative::Method::kMtp ? models::DraftKind::kMtp
                                                                  : models::DraftKind::kEagle;
    eng.draft_layers = d.speculative.draft_layers;
  }
  const hw::HardwareProfile& profile = st->profile;
  auto plan_r = models::PlanMemory(
      st->card, st->layout, st->choice, eng,
      models::DeviceMemory{profile.gpu_memory_bytes, profile.gpu_runtime_memory_bytes, &profile},
      MeanContext(st->sc->workload));
  if (!plan_r.ok()) return st->At(st->pool->pointer, plan_r.status());
  st->plan.emplace(std::move(*plan_r));
  if (d.kv_capacity_scale) ScaleKvPool(*d.kv_capacity_scale, &*st->plan);
  st->cgbs = st->plan->cuda_graph_max_bs;
  return Status::Ok();
}

ModelPricerOptions PricerOptions(const State& st) {
  const DeploymentSpec& d = st.deployment();
  const models::MemoryPlan& plan = *st.plan;
  ModelPricerOptions po;
  po.cuda_graphs = d.cuda_graphs;
  po.cuda_graph_max_bs = st.cgbs;
  po.overlap_schedule = st.overlap;
  po.nvls = plan.nvls;
  po.step_host_s = d.step_costs.host_s;
  po.cpu_schedule_s = d.step_costs.cpu_schedule_s;
  po.cpu_schedule_per_request_s = d.step_costs.cpu_schedule_per_request_s;
  po.cpu_output_per_token_s = d.step_costs.cpu_output_per_token_s;
  po.output_separate = d.step_costs.output_stage == models::OutputStage::kSeparateProcess;
  po.kv_verify = d.kv_integrity == KvIntegrity::kVerify;
  po.page_size = plan.page_size;
  po.verify_tag_bytes_per_page_per_layer = st.profile.kv_verify_tag_bytes_per_page_per_layer;
  po.verify_kernels_per_step = static_cast<int64_t>(st.profile.kv_verify_kernels_per_step);
  if (d.speculative.on()) {
    po.spec_draft_tokens = d.speculative.draft_tokens();
    po.draft = &*st.draft;
  }
  if (st.profile.power.present) po.power = &st.profile.power;
  po.power_limit_w = d.power_limit_w.value_or(0);
  if (d.two_batch_overlap) {
    const models::MicroBatchOverlapRule& r = d.engine_resolution.profile->micro_batch_overlap;
    po.overlap_decode_tokens = r.decode_token_threshold;
    po.overlap_prefill_tokens = r.prefill_token_threshold;
  }
  return po;
}

// Everything this pool's prices depend on: the document but its workload
// (model, hardware, deployment), the pool, the pricer options.
std::string PriceFingerprint(const State& st, const ModelPricerOptions& po) {
  nlohmann::json doc = st.sc->doc;
  doc.erase("workload");
  std::ostringstream fp;
  fp << DumpJson(doc) << "|pool " << st.pool_index << "|" << po.cuda_graphs << " "
     << po.cuda_graph_max_bs << " " << po.overlap_schedule << " " << po.step_host_s << " "
     << po.cpu_schedule_s << " " << po.cpu_schedule_per_request_s << " "
     << po.cpu_output_per_token_s << " " << po.output_separate << " " << po.nvls << " "
     << po.kv_verify << " " << po.page_size << " " << po.verify_tag_bytes_per_page_per_layer << " "
     << po.verify_kernels_per_step << " " << po.overlap_decode_tokens << " "
     << po.overlap_prefill_tokens;
  return fp.str();
}

Status MakePricer(State* st) {
  const DeploymentSpec& d = st->deployment();
  auto cost_r = d.cost_model_factory(st->profile);
  if (!cost_r.ok()) return st->At(st->pool->pointer + "/cost_model", cost_r.status());
  st->cost = std::move(*cost_r);
  st->cost->SetPricedFor(d.engine, d.engine_resolution.version);
  const models::EngineDefaults& ed = d.engine_resolution.profile->defaults;
  st->overlap = d.overlap_schedule.value_or(d.speculative.on() ? ed.speculative_overlap_schedule
                                                               : ed.overlap_schedule);
  const ModelPricerOptions po = PricerOptions(*st);
  SharedStepPrices* shared = nullptr;
  if (st->options.price_cache != nullptr) {
    shared = st->options.price_cache->For(PriceFingerprint(*st, po));
  }
  st->pricer = std::make_unique<ModelStepPricer>(&*st->sharded, st->cost.get(), po, shared);
  return Status::Ok();
}

// The engine's running-request cap: the deployment's, the engine's
// speculative cap, or the engine's rule on the KV capacity.
int64_t MaxRunningRequests(const State& st) {
  const DeploymentSpec& d = st.deployment();
  const models::EngineDefaults& ed = d.engine_resolution.profile->defaults;
  if (d.max_running_requests) return *d.max_running_requests;
  if (d.speculative.on() && ed.speculative_max_running_requests > 0) {
    return ed.speculative_max_running_requests;
  }
  const int64_t ctx_len = std::max<int64_t>(1, st.card.max_position_embeddings);
  return ed.MaxRunningRequests(st.plan->kv_capacity_tokens, ctx_len);
}

// The host tier's blocks and transfer rate, per GPU: each GPU keeps its
// share of a block's KV in its host pool and loads it over its own link.
Status ConfigureHostTier(const State& st, SimConfig* cfg) {
  const KvTiersSpec& t = st.deployment().kv_tiers;
  if (!t.has_host()) return Status::Ok();
  const std::string at = st.pool->pointer + "/kv_tiers";
  if (!cfg->prefix_cache || cfg->prefix_self_only) {
    return st.At(at, Status::Invalid(
                         "a host KV tier holds prefix-cache blocks: it needs prefix_cache on and "
                         "a workload with content identity (sessions, or a trace with hash_ids)"));
  }
  if (st.profile.host_link_bytes_per_s <= 0) {
    return st.At(at, Status::Invalid("hardware profile " + st.profile.name +
                                     " gives no memory.host_link_bytes_per_s: add it (with its "
                                     "source) or remove kv_tiers"));
  }
  SimConfig::HostTier& h = cfg->host_tier;
  h.bytes_per_block = static_cast<double>(st.plan->kv.bytes_per_token * cfg->prefix_block_tokens);
  h.blocks_per_rank = std::max<int64_t>(
      1, static_cast<int64_t>(t.host_gib_per_gpu * kBytesPerGiB / h.bytes_per_block));
  h.policy = t.host_write_policy;
  h.load_bytes_per_s = st.profile.host_link_bytes_per_s;
  const models::HostKvTierRule& rule = st.deployment().engine_resolution.profile->host_kv_tier;
  h.layerwise_overlap = rule.layerwise_load;
  h.load_min_tokens = rule.load_back_min_tokens;
  return Status::Ok();
}

Status ConfigurePool(State* st) {
  const Scenario& sc = *st->sc;
  const DeploymentSpec& d = st->deployment();
  const models::EngineDefaults& ed = d.engine_resolution.profile->defaults;
  const models::MemoryPlan& plan = *st->plan;
  SimConfig& cfg = st->cfg;
  cfg.scheduler = d.scheduler;
  cfg.router = d.router;
  cfg.replicas = d.replicas;
  cfg.ranks_per_replica = st->layout.AttentionRanks();
  cfg.kv_tokens_per_rank = plan.kv_tokens_per_rank;
  cfg.page_size = plan.page_size;
  // A concurrency cap spans the whole request: the pool where requests
  // enter and leave enforces it (with a prefill pool, the decode pool's
  // prealloc queue: sim/pd_link.h), never a prefill pool.
  cfg.concurrency = st->pool->role == schema::PoolRole::kPrefill ? 0 : sc.workload.concurrency;
  cfg.want_trace = st->options.want_trace;
  cfg.fast_forward = st->options.fast_forward;
  cfg.progress = st->options.progress;
  cfg.sched.phase = d.phase;
  cfg.sched.chunked_prefill_tokens = plan.chunked_prefill_tokens;
  ApplyEngineScheduling(ed, &cfg.sched);
  // The PD reservation rule reads SGLang's ratios under any engine.
  CAPPLAN_RETURN_IF_ERROR(FillSglangDefaults(&cfg.sched));
  cfg.sched.speculative = d.speculative.acceptance;
  cfg.sched.seed = sc.workload.seed;
  cfg.sched.overlap_schedule = st->overlap;
  st->mrr = MaxRunningRequests(*st);
  // With DP attention an engine that splits the cap gives each rank its share.
  const int64_t split = ed.max_running_split_over_dp ? cfg.ranks_per_replica : 1;
  cfg.sched.max_running_requests = std::max<int64_t>(1, st->mrr / split);
  cfg.prefix_cache = d.prefix_cache.value_or(ed.prefix_cache);
  if (sc.workload.prefix_block_tokens > 0) {
    cfg.prefix_block_tokens = sc.workload.prefix_block_tokens;
    const Workload* w = &sc.workload;
    cfg.content = [w](int32_t idx, int64_t n_blocks, std::vector<int64_t>* out) {
      ContentBlocks(*w, idx, n_blocks, out);
    };
  } else if (cfg.prefix_cache) {
    // A workload without content identity still has distinct prompts, and
    // an engine whose cache keeps a preempted request's blocks (vLLM frees
    // them into its prefix cache) finds them again when the request
    // resumes: its recompute is only what was evicted meanwhile.
    cfg.prefix_self_only = true;
    cfg.prefix_block_tokens = cfg.page_size;
    cfg.content = [](int32_t idx, int64_t n_blocks, std::vector<int64_t>* out) {
      out->clear();
      for (int64_t b = 0; b < n_blocks; ++b) out->push_back((int64_t{idx} << 32) + b);
    };
  }
  CAPPLAN_RETURN_IF_ERROR(ConfigureHostTier(*st, &cfg));
  st->requests.emplace(&sc.workload);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<PreparedRun>> PrepareRun(const Scenario& sc, size_t pool,
                                                const RunOptions& options) {
  auto st = std::make_unique<PreparedRun::State>();
  st->sc = &sc;
  st->options = options;
  st->pool = &sc.pools.at(pool);
  st->pool_index = pool;
  CAPPLAN_RETURN_IF_ERROR(LoadCardAndProfile(st.get()));
  CAPPLAN_RETURN_IF_ERROR(ShardPoolModel(st.get()));
  CAPPLAN_RETURN_IF_ERROR(PlanPoolMemory(st.get()));
  CAPPLAN_RETURN_IF_ERROR(MakePricer(st.get()));
  CAPPLAN_RETURN_IF_ERROR(ConfigurePool(st.get()));
  return std::make_unique<PreparedRun>(std::move(st));
}

}  // namespace capplan::sim
