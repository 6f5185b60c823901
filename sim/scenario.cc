// Scenario parsing: strict (unknown keys are errors with "did you mean"),
// every error names the file and the JSON path.
#include "sim/scenario.h"

#include <filesystem>

#include "common/did_you_mean.h"
#include "common/json_util.h"
#include "models/engine_profile.h"
#include "models/engine_step_costs.h"
#include "models/expert_parallel.h"
#include "sim/cost_model.h"
#include "sim/micro_batch_overlap.h"
#include "sim/router.h"
#include "sim/scenario_calibration.h"
#include "sim/scheduler.h"

namespace capplan::sim {

std::vector<const models::LaunchBackend*> DeploymentSpec::LaunchBackendChoices() const {
  std::vector<const models::LaunchBackend*> out;
  if (engine_resolution.profile == nullptr) return out;
  for (const std::string& field : models::LaunchBackendFields()) {
    const auto chosen = launch_backends.find(field);
    if (chosen == launch_backends.end()) continue;
    const auto f = engine_resolution.profile->launch_backends.find(field);
    if (f == engine_resolution.profile->launch_backends.end()) continue;
    const auto b = f->second.choices.find(chosen->second);
    if (b != f->second.choices.end()) out.push_back(&b->second);
  }
  return out;
}

namespace {

// Reads `key` as one of `values` by name (`name_of`), keeping *out when absent.
template <class E, size_t N, class NameOf>
Status GetEnum(JsonObject& d, const char* key, const E (&values)[N], NameOf name_of, E* out) {
  std::string name = name_of(*out);
  CAPPLAN_RETURN_IF_ERROR(d.Get(key, &name));
  std::vector<std::string> names;
  for (E v : values) {
    if (name == name_of(v)) {
      *out = v;
      return Status::Ok();
    }
    names.push_back(name_of(v));
  }
  return d.CheckOneOf(key, name, names);
}

// The engine version's step costs, then `step_costs`: {host_s,
// cpu_schedule_s, cpu_schedule_per_request_s, cpu_output_per_token_s},
// each optional, in seconds, and output_stage, in their place.
// `kernels`: {"<selector>": "<implementation>"} over the engine version's
// own choices (a user who runs another backend, e.g. SGLang's
// --attention-backend flashmla).
// deployment.<field> for each launch flag that chooses kernels: one of the
// engine version's backends; a name the version lacks is an error that lists
// the ones it has.
Status ParseLaunchBackends(JsonObject& d, DeploymentSpec* o) {
  const models::EngineProfile& engine = *o->engine_resolution.profile;
  const std::string release = o->engine + " " + o->engine_resolution.version;
  for (const std::string& field : models::LaunchBackendFields()) {
    if (!d.Has(field)) {
      d.Touch(field);
      continue;
    }
    std::string name;
    CAPPLAN_RETURN_IF_ERROR(d.Get(field, &name, true));
    const std::string noun = models::LaunchBackendNoun(field);
    const auto f = engine.launch_backends.find(field);
    if (f == engine.launch_backends.end()) {
      return d.Error(field, release + " offers no " + noun +
                                " choice capplan can price (models/engines/" + o->engine +
                                ".json launch_backends): remove the field or set "
                                "engine_version to a release that has one");
    }
    if (f->second.choices.count(name) == 0) {
      const std::vector<std::string> names = f->second.Names();
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      const std::string close = ClosestMatch(name, names);
      return d.Error(field, release + " has no " + noun + " '" + EchoValue(name) + "': one of " +
                                list + (close.empty() ? "" : " (did you mean '" + close + "'?)"));
    }
    o->launch_backends[field] = name;
  }
  return Status::Ok();
}

Status ParseKernels(JsonObject& d, DeploymentSpec* o) {
  CAPPLAN_RETURN_IF_ERROR(ParseLaunchBackends(d, o));
  std::map<std::string, std::string> names = models::WithLaunchBackendKernels(
      o->engine_resolution.profile->kernel_names, o->LaunchBackendChoices());
  if (d.Has("kernels")) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject k, d.Child("kernels", true));
    for (const auto& [sel, v] : d.Raw("kernels")->items()) {
      if (Status st = models::CheckKernelSelector(sel); !st.ok()) {
        return k.Error(sel, st.message());
      }
      std::string impl;
      CAPPLAN_RETURN_IF_ERROR(k.Get(sel, &impl, true));
      if (impl.empty()) return k.Error(sel, "names no kernel implementation");
      names[sel] = o->kernel_overrides[sel] = impl;
    }
    CAPPLAN_RETURN_IF_ERROR(k.Finish());
  } else {
    d.Touch("kernels");
  }
  auto choices = models::KernelChoices::FromSelectors(names);
  if (!choices.ok()) return d.Error("kernels", choices.status().message());
  o->kernels = std::move(*choices);
  return Status::Ok();
}

Status ParseStepCosts(JsonObject& d, const DeploymentSpec& spec, models::EngineStepCosts* out) {
  auto shipped = models::StepCostsFor(spec.engine, spec.engine_resolution.version_triple);
  if (!shipped.ok()) return d.Error("engine", shipped.status().message());
  *out = *shipped;
  if (!d.Has("step_costs")) {
    d.Touch("step_costs");
    return Status::Ok();
  }
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject s, d.Child("step_costs"));
  CAPPLAN_RETURN_IF_ERROR(s.CheckObject());
  const std::vector<std::string>& keys = models::EngineStepCostKeys();
  for (size_t i = 0; i < keys.size(); ++i) {
    std::optional<double> v;
    CAPPLAN_RETURN_IF_ERROR(s.Get(keys[i], &v));
    if (!v) continue;
    // Seconds: a value past one second is a unit mistake (ms given as s).
    CAPPLAN_RETURN_IF_ERROR(s.CheckRange(keys[i], *v, 0, 1));
    out->Cost(i) = *v;
    out->sources[keys[i]] = "deployment: the scenario's own step_costs";
  }
  std::string stage;
  CAPPLAN_RETURN_IF_ERROR(s.Get("output_stage", &stage));
  if (!stage.empty()) {
    const models::OutputStage both[] = {models::OutputStage::kEngineLoop,
                                        models::OutputStage::kSeparateProcess};
    CAPPLAN_RETURN_IF_ERROR(s.CheckOneOf("output_stage", stage,
                                         {models::OutputStageName(both[0]),
                                          models::OutputStageName(both[1])}));
    out->output_stage = stage == models::OutputStageName(both[0]) ? both[0] : both[1];
    out->sources["output_stage"] = "deployment: the scenario's own step_costs";
  }
  return s.Finish();
}

// deployment.speculative: {method, draft_tokens, acceptance | mean_accept_length,
// draft_layers}. The draft-token limit is the engine's.
Status ParseSpeculative(JsonObject& d, const models::EngineProfile& engine, speculative::Spec* o) {
  if (!d.Has("speculative")) {
    d.Touch("speculative");
    return Status::Ok();
  }
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject sp, d.Child("speculative"));
  CAPPLAN_RETURN_IF_ERROR(sp.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(
      GetEnum(sp, "method", speculative::kMethods, speculative::MethodName, &o->method));
  if (!o->on())
    return sp.Finish({"draft_tokens", "acceptance", "mean_accept_length", "draft_layers"});
  const int64_t max_draft = engine.defaults.speculative_max_draft_tokens;
  int64_t k = 0;
  CAPPLAN_RETURN_IF_ERROR(sp.Get("draft_tokens", &k, true));
  CAPPLAN_RETURN_IF_ERROR(
      sp.CheckRange("draft_tokens", static_cast<double>(k), 1, static_cast<double>(max_draft)));
  CAPPLAN_RETURN_IF_ERROR(sp.Get("draft_layers", &o->draft_layers));
  CAPPLAN_RETURN_IF_ERROR(sp.CheckRange("draft_layers", o->draft_layers, 0, 64));
  const bool has_p = sp.Has("acceptance"), has_len = sp.Has("mean_accept_length");
  if (has_p == has_len) {
    return sp.Error(has_p ? "mean_accept_length" : "acceptance",
                    "give exactly one of acceptance (a probability per draft token) and "
                    "mean_accept_length");
  }
  std::string err;
  if (has_p) {
    std::vector<double> p;
    CAPPLAN_RETURN_IF_ERROR(sp.Get("acceptance", &p));
    if (static_cast<int64_t>(p.size()) != k) {
      return sp.Error("acceptance", "needs one probability per draft token: " + std::to_string(k) +
                                        ", got " + std::to_string(p.size()));
    }
    if (!speculative::MakeAcceptance(p, &o->acceptance, &err)) return sp.Error("acceptance", err);
  } else {
    double len = 0;
    CAPPLAN_RETURN_IF_ERROR(sp.Get("mean_accept_length", &len));
    if (!speculative::AcceptanceFromMeanLength(len, k, &o->acceptance, &err)) {
      return sp.Error("mean_accept_length", err);
    }
  }
  return sp.Finish();
}

Status ParseEngine(JsonObject& d, DeploymentSpec* o) {
  CAPPLAN_RETURN_IF_ERROR(d.Get("engine", &o->engine));
  CAPPLAN_RETURN_IF_ERROR(d.CheckOneOf("engine", o->engine, models::EngineNames()));
  CAPPLAN_RETURN_IF_ERROR(d.Get("engine_version", &o->engine_version));
  auto resolved = models::ResolveEngine(o->engine, o->engine_version);
  if (!resolved.ok()) return d.Error("engine_version", resolved.status().message());
  o->engine_resolution = *resolved;
  return Status::Ok();
}

// EPLB redundant experts: the total as the engines count them
// (redundant_experts), or per EP rank (redundant_experts_per_rank x ep), not
// both.
Status ParseRedundantExperts(JsonObject& e, int ep, int* total) {
  if (e.Has("redundant_experts") && e.Has("redundant_experts_per_rank")) {
    return e.Error("redundant_experts_per_rank",
                   "give redundant_experts (the total over all EP ranks, SGLang "
                   "--ep-num-redundant-experts) or redundant_experts_per_rank, not both");
  }
  if (e.Has("redundant_experts_per_rank")) {
    int per_rank = 0;
    CAPPLAN_RETURN_IF_ERROR(e.Get("redundant_experts_per_rank", &per_rank));
    CAPPLAN_RETURN_IF_ERROR(e.CheckRange("redundant_experts_per_rank", per_rank, 0, 4096));
    *total = per_rank * ep;
    return Status::Ok();
  }
  e.Touch("redundant_experts_per_rank");
  CAPPLAN_RETURN_IF_ERROR(e.Get("redundant_experts", total));
  return e.CheckRange("redundant_experts", *total, 0, 65536);
}

// deployment.expert_parallel: {all_to_all, deepep_mode, hot_expert_factor |
// expert_load, redundant_experts | redundant_experts_per_rank}. all_to_all defaults to deepep
// when the instance spans nodes, else collective.
Status ParseExpertParallel(JsonObject& d, DeploymentSpec* o) {
  models::ExpertPlacement& x = o->expert;
  x.all_to_all = o->nodes > 1 && o->ep > 1 ? models::MoeAllToAll::kDeepEp
                                            : models::MoeAllToAll::kCollective;
  if (!d.Has("expert_parallel")) {
    d.Touch("expert_parallel");
    return Status::Ok();
  }
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject e, d.Child("expert_parallel"));
  CAPPLAN_RETURN_IF_ERROR(e.CheckObject());
  constexpr models::MoeAllToAll kAllToAlls[] = {models::MoeAllToAll::kCollective,
                                                models::MoeAllToAll::kDeepEp};
  constexpr models::DeepEpMode kModes[] = {models::DeepEpMode::kAuto,
                                           models::DeepEpMode::kLowLatency,
                                           models::DeepEpMode::kNormal};
  CAPPLAN_RETURN_IF_ERROR(
      GetEnum(e, "all_to_all", kAllToAlls, models::MoeAllToAllName, &x.all_to_all));
  CAPPLAN_RETURN_IF_ERROR(
      GetEnum(e, "deepep_mode", kModes, models::DeepEpModeName, &x.deepep_mode));
  CAPPLAN_RETURN_IF_ERROR(ParseRedundantExperts(e, o->ep, &x.redundant_experts));
  if (e.Has("hot_expert_factor") && e.Has("expert_load")) {
    return e.Error("expert_load", "give hot_expert_factor or expert_load, not both");
  }
  CAPPLAN_RETURN_IF_ERROR(e.Get("hot_expert_factor", &x.hot_expert_factor));
  CAPPLAN_RETURN_IF_ERROR(e.CheckRange("hot_expert_factor", x.hot_expert_factor, 1, 1000));
  CAPPLAN_RETURN_IF_ERROR(e.Get("expert_load", &x.expert_load));
  for (double v : x.expert_load) {
    if (!(v >= 0)) return e.Error("expert_load", "loads must be >= 0 (tokens per expert)");
  }
  return e.Finish();
}

// gpus, tp, ep, DP attention, replicas, and the machines they sit on.
Status ParseLayout(JsonObject& d, DeploymentSpec* o) {
  CAPPLAN_RETURN_IF_ERROR(d.Get("gpus", &o->gpus, true));
  CAPPLAN_RETURN_IF_ERROR(d.CheckRange("gpus", o->gpus, 1, 4096));
  CAPPLAN_RETURN_IF_ERROR(d.Get("tp", &o->tp, true));
  CAPPLAN_RETURN_IF_ERROR(d.CheckRange("tp", o->tp, 1, models::kMaxParallelDegree));
  CAPPLAN_RETURN_IF_ERROR(d.Get("ep", &o->ep));
  CAPPLAN_RETURN_IF_ERROR(d.CheckRange("ep", o->ep, 1, models::kMaxParallelDegree));
  CAPPLAN_RETURN_IF_ERROR(d.Get("dp_attention", &o->dp_attention));
  CAPPLAN_RETURN_IF_ERROR(d.Get("dp", &o->dp));
  CAPPLAN_RETURN_IF_ERROR(d.CheckRange("dp", o->dp, 0, 4096));
  CAPPLAN_RETURN_IF_ERROR(d.Get("replicas", &o->replicas));
  CAPPLAN_RETURN_IF_ERROR(d.CheckRange("replicas", o->replicas, 1, 100000));
  CAPPLAN_RETURN_IF_ERROR(d.Get("nodes", &o->nodes));
  CAPPLAN_RETURN_IF_ERROR(d.CheckRange("nodes", o->nodes, 1, 4096));
  CAPPLAN_RETURN_IF_ERROR(d.Get("gpus_per_node", &o->gpus_per_node));
  CAPPLAN_RETURN_IF_ERROR(d.CheckRange("gpus_per_node", o->gpus_per_node, 0, 4096));
  constexpr models::NodeLink kLinks[] = {models::NodeLink::kRdma, models::NodeLink::kNvlink};
  CAPPLAN_RETURN_IF_ERROR(GetEnum(
      d, "node_link", kLinks,
      [](models::NodeLink l) { return l == models::NodeLink::kNvlink ? "nvlink" : "rdma"; },
      &o->node_link));
  return ParseExpertParallel(d, o);
}

Status ParsePrecision(JsonObject& d, DeploymentSpec* o) {
  CAPPLAN_RETURN_IF_ERROR(d.Get("weights", &o->weights));
  CAPPLAN_RETURN_IF_ERROR(d.CheckOneOf("weights", o->weights, models::WeightChoiceNames()));
  if (const nlohmann::json* w = d.Raw("weights_per_component"); w != nullptr && !w->is_null()) {
    if (!w->is_object()) return d.Error("weights_per_component", "must be an object like {\"experts\": \"int4\"}");
    for (const auto& [k, v] : w->items()) {
      if (!v.is_string()) return d.Error("weights_per_component", "/" + k + " must be a string");
      auto component = models::ParseComponent(k);
      if (!component.ok()) {
        return d.Error("weights_per_component", "/" + k + ": " + component.status().message());
      }
      o->weights_per_component[*component] = v.get<std::string>();
    }
  }
  // A KV format of the format table (hw/formats.json kv_cache names), or
  // one of its aliases ("fp8_e4m3").
  CAPPLAN_ASSIGN_OR_RETURN(const hw::FormatTable* formats, hw::GetFormatTable());
  std::string kv = models::DtypeName(o->kv_cache);
  CAPPLAN_RETURN_IF_ERROR(d.Get("kv_cache", &kv));
  auto id = formats->Find(kv);
  if (id.ok()) kv = formats->Row(*id).name;
  CAPPLAN_RETURN_IF_ERROR(d.CheckOneOf("kv_cache", kv, formats->kv_choices));
  o->kv_cache = *id;
  return Status::Ok();
}

// Memory and batching limits: null or absent keeps the engine's default.
Status ParseEngineLimits(JsonObject& d, DeploymentSpec* o) {
  CAPPLAN_RETURN_IF_ERROR(d.Get("mem_fraction_static", &o->mem_fraction_static));
  if (o->mem_fraction_static) {
    CAPPLAN_RETURN_IF_ERROR(d.CheckRange("mem_fraction_static", *o->mem_fraction_static, 0.05, 1.0));
  }
  if (d.Has("chunked_prefill_tokens")) {
    CAPPLAN_RETURN_IF_ERROR(d.Get("chunked_prefill_tokens", &o->chunked_prefill_tokens));
    CAPPLAN_RETURN_IF_ERROR(
        d.CheckRange("chunked_prefill_tokens", o->chunked_prefill_tokens, 1, 1 << 24));
  }
  CAPPLAN_RETURN_IF_ERROR(d.Get("max_running_requests", &o->max_running_requests));
  if (o->max_running_requests) {
    CAPPLAN_RETURN_IF_ERROR(d.CheckRange("max_running_requests", *o->max_running_requests, 1, 1 << 24));
  }
  if (d.Has("page_size")) {
    CAPPLAN_RETURN_IF_ERROR(d.Get("page_size", &o->page_size));
    CAPPLAN_RETURN_IF_ERROR(d.CheckRange("page_size", o->page_size, 1, 4096));
  }
  CAPPLAN_RETURN_IF_ERROR(d.Get("cuda_graphs", &o->cuda_graphs));
  CAPPLAN_RETURN_IF_ERROR(d.Get("cuda_graph_max_bs", &o->cuda_graph_max_bs));
  if (o->cuda_graph_max_bs) {
    CAPPLAN_RETURN_IF_ERROR(d.CheckRange("cuda_graph_max_bs", *o->cuda_graph_max_bs, 0, 1 << 20));
  }
  // Checked against the profile's idle and board power when the run is
  // prepared (sim/energy.h).
  CAPPLAN_RETURN_IF_ERROR(d.Get("power_limit_w", &o->power_limit_w));
  if (o->power_limit_w) {
    CAPPLAN_RETURN_IF_ERROR(d.CheckRange("power_limit_w", *o->power_limit_w, 1, 1e5));
  }
  return Status::Ok();
}

// Scheduler, router, engine toggles, kernels and the cost model.
Status ParsePolicies(JsonObject& d, DeploymentSpec* o) {
  CAPPLAN_RETURN_IF_ERROR(
      GetEnum(d, "kv_integrity", kKvIntegrities, KvIntegrityName, &o->kv_integrity));
  CAPPLAN_RETURN_IF_ERROR(GetEnum(d, "phase", kPhases, PhaseName, &o->phase));
  if (d.Has("scheduler")) {
    CAPPLAN_RETURN_IF_ERROR(d.Get("scheduler", &o->scheduler));
    CAPPLAN_RETURN_IF_ERROR(d.CheckOneOf("scheduler", o->scheduler, Schedulers().Names()));
  } else {
    d.Touch("scheduler");
    o->scheduler = o->engine;  // each engine's own batching loop is registered under its name
  }
  CAPPLAN_RETURN_IF_ERROR(d.Get("router", &o->router));
  CAPPLAN_RETURN_IF_ERROR(d.CheckOneOf("router", o->router, Routers().Names()));
  for (auto [key, out] :
       {std::pair{"overlap_schedule", &o->overlap_schedule},
        std::pair{"prefix_cache", &o->prefix_cache}, std::pair{"nccl_nvls", &o->nccl_nvls}}) {
    if (d.Has(key)) {
      bool b = false;
      CAPPLAN_RETURN_IF_ERROR(d.Get(key, &b));
      *out = b;
    } else {
      d.Touch(key);
    }
  }
  CAPPLAN_RETURN_IF_ERROR(ParseKernels(d, o));
  CAPPLAN_RETURN_IF_ERROR(d.Get("cost_model", &o->cost_model));
  // The registry's own message ("unknown cost model ...", did you mean).
  auto factory = CostModels().Find(o->cost_model);
  if (!factory.ok()) return d.Error("cost_model", factory.status().message());
  o->cost_model_factory = *factory;
  return Status::Ok();
}

// Cross-field rules: well-formed but impossible layouts exit 1.
Status CheckLayout(JsonObject& d, DeploymentSpec* o) {
  if (o->gpus != o->tp) {
    return d.Invalid("gpus", "an instance's GPUs must equal tp (got gpus " + std::to_string(o->gpus) +
                                 ", tp " + std::to_string(o->tp) +
                                 "); use replicas for more instances");
  }
  if (o->tp % o->ep != 0) {
    return d.Invalid("ep", "ep " + std::to_string(o->ep) + " must divide tp " + std::to_string(o->tp));
  }
  if (o->dp != 0 && (!o->dp_attention || o->tp % o->dp != 0)) {
    return d.Invalid("dp", "dp needs dp_attention: true and must divide tp " + std::to_string(o->tp));
  }
  if (o->gpus_per_node == 0) {
    if (o->gpus % o->nodes != 0) {
      return d.Invalid("nodes", std::to_string(o->nodes) + " nodes do not split gpus " +
                                    std::to_string(o->gpus) + " evenly; set gpus_per_node");
    }
    o->gpus_per_node = o->gpus / o->nodes;
  }
  if (o->nodes * o->gpus_per_node != o->gpus) {
    return d.Invalid("gpus_per_node",
                     std::to_string(o->nodes) + " nodes x " + std::to_string(o->gpus_per_node) +
                         " GPUs is " + std::to_string(o->nodes * o->gpus_per_node) +
                         ", not gpus " + std::to_string(o->gpus) + "; set gpus_per_node " +
                         (o->gpus % o->nodes == 0 ? std::to_string(o->gpus / o->nodes)
                                                  : std::string("so that nodes x it = gpus")));
  }
  if (o->nodes == 1 && o->node_link == models::NodeLink::kNvlink) {
    return d.Invalid("node_link", "nvlink joins nodes; one node needs none: remove it");
  }
  return Status::Ok();
}

// A layer kept on each DP rank (`key`): the engine version's default
// (`on_by_default`), or (true) the flag that sets it ("" when the version
// has none); `unsharded`: the flag runs it at TP 1, so dp must equal tp.
Status ParseDpRankLayer(JsonObject& d, const DeploymentSpec& o, const char* key,
                        bool on_by_default, const std::string& flag, bool unsharded,
                        std::optional<bool>* out) {
  if (!d.Has(key)) {
    d.Touch(key);
    return Status::Ok();
  }
  bool on = false;
  CAPPLAN_RETURN_IF_ERROR(d.Get(key, &on));
  *out = on;
  const std::string release = o.engine + " " + o.engine_resolution.version;
  if (on == on_by_default) return Status::Ok();
  if (!on) {
    return d.Invalid(key, release + " always keeps the layer on each DP rank: remove " + key);
  }
  if (flag.empty()) {
    return d.Error(key, release + " has no flag keeping the layer on each DP rank in capplan's "
                                  "engine profile (expert_parallel." + key + "_flag): use a "
                                  "version that has one, or remove " + key);
  }
  const int dp = o.dp > 0 ? o.dp : o.tp;
  if (!o.dp_attention || (unsharded && dp != o.tp)) {
    return d.Invalid(key, release + " " + flag +
                              (unsharded ? " runs the layer unsharded on each rank: it needs "
                                           "dp_attention with dp equal to tp (attention TP 1)"
                                         : " needs dp_attention"));
  }
  return Status::Ok();
}

// dense_ffn_per_dp_rank (SGLang's --moe-dense-tp-size 1 runs the dense
// layers unsharded) and lm_head_per_dp_rank (--enable-dp-lm-head, over
// attention TP).
Status ParseDpRankLayers(JsonObject& d, DeploymentSpec* o) {
  const models::ExpertSplitRule& r = o->engine_resolution.profile->expert_split;
  CAPPLAN_RETURN_IF_ERROR(ParseDpRankLayer(d, *o, "dense_ffn_per_dp_rank",
                                           r.dense_ffn_per_dp_rank, r.dense_ffn_per_dp_rank_flag,
                                           true, &o->dense_ffn_per_dp_rank));
  return ParseDpRankLayer(d, *o, "lm_head_per_dp_rank", r.lm_head_per_dp_rank,
                          r.lm_head_per_dp_rank_flag, false, &o->lm_head_per_dp_rank);
}

Status ParseDeployment(JsonObject& d, DeploymentSpec* o) {
  CAPPLAN_RETURN_IF_ERROR(d.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(ParseEngine(d, o));
  CAPPLAN_RETURN_IF_ERROR(ParseLayout(d, o));
  CAPPLAN_RETURN_IF_ERROR(ParsePrecision(d, o));
  CAPPLAN_RETURN_IF_ERROR(ParseEngineLimits(d, o));
  CAPPLAN_RETURN_IF_ERROR(ParsePolicies(d, o));
  CAPPLAN_RETURN_IF_ERROR(ParseSpeculative(d, *o->engine_resolution.profile, &o->speculative));
  CAPPLAN_RETURN_IF_ERROR(ParseStepCosts(d, *o, &o->step_costs));
  CAPPLAN_RETURN_IF_ERROR(ParseKvTiers(d, *o->engine_resolution.profile,
                                       o->engine + " " + o->engine_resolution.version,
                                       &o->kv_tiers));
  CAPPLAN_RETURN_IF_ERROR(ParseTwoBatchOverlap(
      d, *o->engine_resolution.profile, o->engine + " " + o->engine_resolution.version, o->ep,
      o->expert.all_to_all, &o->two_batch_overlap));
  CAPPLAN_RETURN_IF_ERROR(ParseDpRankLayers(d, o));
  CAPPLAN_RETURN_IF_ERROR(d.Finish());
  return CheckLayout(d, o);
}

// A prefill/decode scenario's `pd` {prefill, decode, transfer}: each pool is
// a deployment object read at its own path with its phase fixed by its role.
Status ParsePdPools(JsonObject& root, Scenario* sc) {
  if (root.Has("deployment")) {
    return Status::Usage(sc->origin +
                         ": /deployment: a PD scenario declares /pd/prefill and /pd/decode "
                         "instead of /deployment; remove /deployment");
  }
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject p, root.Child("pd", true));
  const struct {
    const char* name;
    schema::PoolRole role;
    Phase phase;
  } pools[] = {{"prefill", schema::PoolRole::kPrefill, Phase::kPrefillOnly},
               {"decode", schema::PoolRole::kDecode, Phase::kDecodeOnly}};
  for (const auto& want : pools) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject d, p.Child(want.name, true));
    PoolSpec pool{want.name, want.role, d.pointer(), {}};
    const nlohmann::json* phase = d.Raw("phase");
    if (phase != nullptr && *phase != PhaseName(want.phase)) {
      return d.Error("phase", std::string("must be \"") + PhaseName(want.phase) +
                                  "\" (or absent) in a PD pool");
    }
    CAPPLAN_RETURN_IF_ERROR(ParseDeployment(d, &pool.deployment));
    pool.deployment.phase = want.phase;
    sc->pools.push_back(std::move(pool));
  }
  pd::KvTransferSpec& t = sc->transfer.emplace();
  sc->pool_link = "pd";
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject tj, p.Child("transfer"));
  CAPPLAN_RETURN_IF_ERROR(tj.Get("link", &t.link));
  CAPPLAN_RETURN_IF_ERROR(tj.CheckOneOf("link", t.link, pd::KvLinkChoices()));
  CAPPLAN_RETURN_IF_ERROR(tj.Get("layerwise_overlap", &t.layerwise_overlap));
  CAPPLAN_RETURN_IF_ERROR(tj.Finish());
  return p.Finish();
}

Status ParsePools(JsonObject& root, Scenario* sc) {
  if (root.Has("pd")) return ParsePdPools(root, sc);
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject d, root.Child("deployment", true));
  PoolSpec pool{"", schema::PoolRole::kBoth, d.pointer(), {}};
  CAPPLAN_RETURN_IF_ERROR(ParseDeployment(d, &pool.deployment));
  sc->pools.push_back(std::move(pool));
  return Status::Ok();
}

// GPU-hours at a price, or a GPU's purchase price over its life; the
// electricity price and the facility's PUE (sim/energy.h).
Status ParseCost(JsonObject& c, Scenario* sc) {
  if (c.Has("usd_per_gpu_hour")) {
    double usd = 0;
    CAPPLAN_RETURN_IF_ERROR(c.Get("usd_per_gpu_hour", &usd, true));
    CAPPLAN_RETURN_IF_ERROR(c.CheckRange("usd_per_gpu_hour", usd, 0, 1e6));
    sc->usd_per_gpu_hour = usd;
  }
  std::optional<double> capex, years;
  CAPPLAN_RETURN_IF_ERROR(c.Get("capex_usd_per_gpu", &capex));
  CAPPLAN_RETURN_IF_ERROR(c.Get("amortization_years", &years));
  if (capex || years) {
    if (!capex || !years) {
      return c.Error(capex ? "amortization_years" : "capex_usd_per_gpu",
                     "capex_usd_per_gpu and amortization_years go together (e.g. 30000 and 5)");
    }
    if (sc->usd_per_gpu_hour) {
      return c.Error("capex_usd_per_gpu",
                     "give either usd_per_gpu_hour or capex_usd_per_gpu with amortization_years");
    }
    CAPPLAN_RETURN_IF_ERROR(c.CheckRange("capex_usd_per_gpu", *capex, 0, 1e8));
    CAPPLAN_RETURN_IF_ERROR(c.CheckRange("amortization_years", *years, 0.1, 50));
    sc->usd_per_gpu_hour = CapexUsdPerGpuHour(*capex, *years);
    sc->energy.capex_usd_per_gpu = capex;
    sc->energy.amortization_years = years;
  }
  CAPPLAN_RETURN_IF_ERROR(
      c.Get("host_memory_usd_per_gib_hour", &sc->host_memory_usd_per_gib_hour));
  if (sc->host_memory_usd_per_gib_hour) {
    CAPPLAN_RETURN_IF_ERROR(c.CheckRange("host_memory_usd_per_gib_hour",
                                         *sc->host_memory_usd_per_gib_hour, 0, 100));
  }
  CAPPLAN_RETURN_IF_ERROR(c.Get("usd_per_kwh", &sc->energy.usd_per_kwh));
  if (sc->energy.usd_per_kwh) {
    CAPPLAN_RETURN_IF_ERROR(c.CheckRange("usd_per_kwh", *sc->energy.usd_per_kwh, 0, 100));
  }
  if (c.Has("pue")) {
    CAPPLAN_RETURN_IF_ERROR(c.Get("pue", &sc->energy.pue, true));
    CAPPLAN_RETURN_IF_ERROR(c.CheckRange("pue", sc->energy.pue, 1, 5));
  }
  return c.Finish();
}

Status ParseSlo(JsonObject& s, SloSpec* o) {
  CAPPLAN_RETURN_IF_ERROR(s.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(s.Get("ttft_ms", &o->ttft_ms));
  CAPPLAN_RETURN_IF_ERROR(s.Get("tpot_ms", &o->tpot_ms));
  CAPPLAN_RETURN_IF_ERROR(s.Get("e2el_ms", &o->e2el_ms));
  for (const char* k : {"ttft_ms", "tpot_ms", "e2el_ms"}) {
    std::optional<double> v;
    CAPPLAN_RETURN_IF_ERROR(s.Get(k, &v));
    if (v) CAPPLAN_RETURN_IF_ERROR(s.CheckRange(k, *v, 0, 1e12));
  }
  return s.Finish();
}

}  // namespace

Result<std::shared_ptr<const Scenario>> ParseScenario(const nlohmann::json& doc,
                                                      const std::string& origin) {
  auto sc = std::make_shared<Scenario>();
  sc->origin = origin;
  sc->doc = doc;
  JsonObject root(sc->doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(root.Get("name", &sc->name, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("description", &sc->description));
  CAPPLAN_RETURN_IF_ERROR(root.Get("model", &sc->model, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("hardware", &sc->hardware));
  CAPPLAN_RETURN_IF_ERROR(ParsePools(root, sc.get()));
  CAPPLAN_RETURN_IF_ERROR(ParseScenarioCalibration(root, sc.get()));
  {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject w, root.Child("workload", true));
    std::string dir = std::filesystem::path(origin).parent_path().string();
    if (dir.empty()) dir = ".";
    CAPPLAN_ASSIGN_OR_RETURN(sc->workload, LoadWorkload(w, dir));
  }
  {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject c, root.Child("cost"));
    CAPPLAN_RETURN_IF_ERROR(ParseCost(c, sc.get()));
  }
  {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject s, root.Child("slo"));
    CAPPLAN_RETURN_IF_ERROR(ParseSlo(s, &sc->slo));
  }
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  return std::shared_ptr<const Scenario>(std::move(sc));
}

Result<std::shared_ptr<const Scenario>> LoadScenarioFile(const std::string& path,
                                                         const std::vector<std::string>& sets) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  for (const std::string& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::Usage("--set '" + EchoValue(s) +
                           "': expected dotted.path=value, e.g. deployment.tp=4");
    }
    CAPPLAN_RETURN_IF_ERROR(SetDotted(&doc, s.substr(0, eq), s.substr(eq + 1), "--set"));
  }
  return ParseScenario(doc, path);
}

models::ParallelLayout ParallelLayoutOf(const DeploymentSpec& d) {
  models::ParallelLayout layout;
  layout.gpus = d.gpus;
  layout.tp = d.tp;
  layout.ep = d.ep;
  layout.dp_attention = d.dp_attention;
  layout.dp = d.dp_attention ? (d.dp > 0 ? d.dp : d.tp) : 1;
  layout.nodes = d.nodes;
  layout.gpus_per_node = d.gpus_per_node;
  layout.node_link = d.node_link;
  layout.expert = d.expert;
  const models::EngineProfile* engine = d.engine_resolution.profile;
  layout.dense_ffn_per_dp_rank = d.dense_ffn_per_dp_rank.value_or(
      engine != nullptr && engine->expert_split.dense_ffn_per_dp_rank);
  layout.lm_head_per_dp_rank = d.lm_head_per_dp_rank.value_or(
      engine != nullptr && engine->expert_split.lm_head_per_dp_rank);
  return layout;
}

}  // namespace capplan::sim
