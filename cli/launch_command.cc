// `capplan launch SCENARIO.json|SEARCH_DIR [--set ...] [--model-path P]`:
// the `vllm serve` or `python -m sglang.launch_server` command that realizes
// a scenario's deployment (or a search's winner), one per pool, with the
// flags of the deployment's engine release. Flag names and the releases that
// have them come from models/engine_launch_flags.json, each with its public
// source; a setting whose flag the release lacks is refused in one line
// (parallelism, precision) or printed as a comment (tuning knobs), never
// guessed.
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <map>

#include "cli/commands.h"
#include "cli/parse_flags.h"
#include "common/data_path.h"
#include "common/did_you_mean.h"
#include "common/json_util.h"
#include "models/card.h"
#include "models/engine_profile.h"
#include "models/expert_parallel.h"
#include "sim/scenario.h"
#include "sim/simulate.h"

namespace capplan::cli {

namespace po = boost::program_options;

namespace {

constexpr const char* kFlagsFile = "models/engine_launch_flags.json";

// The options cli/launch reads; the data file may name no others.
const std::vector<std::string>& OptionKeys() {
  static const std::vector<std::string> keys = {
      "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
      "enable_dp_attention",  "enable_expert_parallel", "ep_size",
      "enable_ep_moe",        "deepep",                 "kv_cache_dtype",
      "max_running_requests", "chunked_prefill_tokens", "enable_chunked_prefill",
      "mem_fraction",         "page_size",              "prefix_cache_on",
      "prefix_cache_off",     "disable_cuda_graphs",    "cuda_graph_max_bs",
      "disable_overlap_schedule", "nccl_nvls",          "quantization",
      "disaggregation_mode",  "nnodes",                 "node_rank",
      "dist_init_addr",       "attention_backend",      "moe_runner_backend",
      "enable_eplb",          "num_redundant_experts",  "data_parallel_size_local",
      "data_parallel_address"};
  return keys;
}

struct LaunchFlag {
  std::string flag;
  std::string since;
  std::array<int, 3> since_triple{};
  std::string until;  // "" when still present
  std::array<int, 3> until_triple{};
  std::map<std::string, std::string> values;  // capplan's value -> the engine's
};

struct EngineLaunch {
  std::string program;
  bool model_positional = false;
  std::string model_flag;
  std::map<std::string, LaunchFlag> options;
};

Result<LaunchFlag> ParseLaunchFlag(JsonObject o) {
  LaunchFlag f;
  std::string source;
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(o.Get("flag", &f.flag, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("since", &f.since, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("until", &f.until));
  CAPPLAN_RETURN_IF_ERROR(o.Get("source", &source, true));
  CAPPLAN_ASSIGN_OR_RETURN(f.since_triple, models::ParseEngineVersion(f.since, o.PathOf("since")));
  if (!f.until.empty()) {
    CAPPLAN_ASSIGN_OR_RETURN(f.until_triple,
                             models::ParseEngineVersion(f.until, o.PathOf("until")));
  }
  if (o.Has("values")) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject v, o.Child("values", true));
    const nlohmann::json* raw = o.Raw("values");
    for (auto it = raw->begin(); it != raw->end(); ++it) {
      std::string to;
      CAPPLAN_RETURN_IF_ERROR(v.Get(it.key(), &to, true));
      f.values[it.key()] = to;
    }
  }
  CAPPLAN_RETURN_IF_ERROR(o.Finish());
  return f;
}

Result<EngineLaunch> LoadEngineLaunch(const std::string& engine) {
  const std::string path = DataPath(kFlagsFile);
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  JsonObject root(doc, path, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  std::string comment;
  CAPPLAN_RETURN_IF_ERROR(root.CheckFormat("capplan.engine_launch_flags.v1"));
  CAPPLAN_RETURN_IF_ERROR(root.Get("comment", &comment));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject engines, root.Child("engines", true));
  if (!engines.Has(engine)) {
    return Status::Usage(path + ": /engines: no entry for engine '" + engine +
                         "'; add its program and flags there to launch it");
  }
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject e, engines.Child(engine, true));
  EngineLaunch out;
  CAPPLAN_RETURN_IF_ERROR(e.Get("program", &out.program, true));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject model, e.Child("model", true));
  CAPPLAN_RETURN_IF_ERROR(model.Get("positional", &out.model_positional, true));
  CAPPLAN_RETURN_IF_ERROR(model.Get("flag", &out.model_flag, true));
  std::string model_since, model_source;
  CAPPLAN_RETURN_IF_ERROR(model.Get("since", &model_since, true));
  CAPPLAN_RETURN_IF_ERROR(model.Get("source", &model_source, true));
  CAPPLAN_RETURN_IF_ERROR(model.Finish());
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject options, e.Child("options", true));
  const nlohmann::json* raw = e.Raw("options");
  for (auto it = raw->begin(); it != raw->end(); ++it) {
    const std::vector<std::string>& known = OptionKeys();
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      return options.Error(it.key(), "unknown option" + DidYouMean(it.key(), known));
    }
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, options.Child(it.key(), true));
    CAPPLAN_ASSIGN_OR_RETURN(out.options[it.key()], ParseLaunchFlag(o));
  }
  CAPPLAN_RETURN_IF_ERROR(e.Finish());
  CAPPLAN_RETURN_IF_ERROR(root.Finish({"engines"}));
  return out;
}

// How a setting without a flag in the deployment's release is handled.
enum class Need {
  kRequired,  // a one-line error: the command would serve something else
  kComment,   // a comment line: a tuning knob the engine's default replaces
  kIfPresent  // nothing: the release does without it (a switch later dropped)
};

// One engine command being assembled for one pool.
class CommandLine {
 public:
  // `origin`: where the deployment is, "FILE: /deployment".
  CommandLine(const EngineLaunch& e, const std::string& engine,
              const models::EngineResolution& r, std::string origin)
      : e_(e), engine_(engine), r_(r), origin_(std::move(origin)) {}

  // Appends `option` (with `value`, "" for a switch) for `setting`, the
  // deployment field it realizes ("kv_cache fp8").
  Status Add(const std::string& option, const std::string& value, const std::string& setting,
             Need need) {
    const auto it = e_.options.find(option);
    std::string why;
    if (it == e_.options.end()) {
      why = engine_ + " has no flag for it in " + std::string(kFlagsFile);
    } else if (r_.version_triple < it->second.since_triple) {
      why = engine_ + " " + r_.version + " lacks " + it->second.flag + " (from " +
            it->second.since + ", " + kFlagsFile + ")";
    } else if (!it->second.until.empty() && r_.version_triple >= it->second.until_triple) {
      why = engine_ + " " + r_.version + " no longer has " + it->second.flag + " (dropped in " +
            it->second.until + ", " + kFlagsFile + ")";
    }
    if (why.empty()) {
      std::string v = value;
      if (!it->second.values.empty() && !value.empty()) {
        const auto m = it->second.values.find(value);
        if (m == it->second.values.end()) {
          why = engine_ + " " + it->second.flag + " has no value for " + value;
        } else {
          v = m->second;
        }
      }
      if (why.empty()) {
        flags_ += " " + it->second.flag + (v.empty() ? "" : " " + v);
        return Status::Ok();
      }
    }
    if (need == Need::kIfPresent) return Status::Ok();
    if (need == Need::kComment) {
      Note(setting + ": " + why + "; the engine's default applies");
      return Status::Ok();
    }
    return Status::Usage("launch: " + origin_ + "/" + setting + ": " + why +
                         "; set deployment.engine_version to a release that has it, or "
                         "change the setting");
  }
  // A flag the engine profile names for the resolved version.
  void AddFlag(const std::string& flag) { flags_ += " " + flag; }
  void Note(const std::string& text) { notes_ += "# " + text + "\n"; }
  std::string Render(const std::string& model) const {
    const std::string m = e_.model_positional ? " " + model : " " + e_.model_flag + " " + model;
    return e_.program + m + flags_ + "\n" + notes_;
  }

 private:
  const EngineLaunch& e_;
  const std::string engine_;
  const models::EngineResolution& r_;
  const std::string origin_;
  std::string flags_, notes_;
};

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// Tensor, data and expert parallelism. SGLang names all three; vLLM's
// attention DP is --data-parallel-size with TP inside each rank, and its EP
// always spans every DP x TP rank.
Status AddParallelism(const sim::DeploymentSpec& d, const std::string& where, CommandLine* c) {
  const int dp = d.dp_attention ? (d.dp > 0 ? d.dp : d.tp) : 1;
  const bool vllm = d.engine == "vllm";
  const int tp = vllm && d.dp_attention ? d.tp / dp : d.tp;
  CAPPLAN_RETURN_IF_ERROR(c->Add("tensor_parallel_size", std::to_string(tp),
                                 "tp " + std::to_string(d.tp), Need::kRequired));
  if (d.dp_attention) {
    const std::string setting = "dp_attention true, dp " + std::to_string(dp);
    if (!vllm) CAPPLAN_RETURN_IF_ERROR(c->Add("enable_dp_attention", "", setting, Need::kRequired));
    CAPPLAN_RETURN_IF_ERROR(
        c->Add("data_parallel_size", std::to_string(dp), setting, Need::kRequired));
  }
  if (d.ep <= 1) return Status::Ok();
  const std::string setting = "ep " + std::to_string(d.ep);
  if (!vllm) {
    CAPPLAN_RETURN_IF_ERROR(c->Add("enable_ep_moe", "", setting, Need::kIfPresent));
    return c->Add("ep_size", std::to_string(d.ep), setting, Need::kRequired);
  }
  if (d.ep != d.tp) {
    return Status::Usage("launch: " + where + "/" + setting + ": vllm's expert parallelism spans "
                         "every DP x TP rank (" + std::to_string(d.tp) +
                         " here), so ep must be 1 or " + std::to_string(d.tp));
  }
  return c->Add("enable_expert_parallel", "", setting, Need::kRequired);
}

// EPLB redundant experts, as the engines count them (over all EP ranks);
// vLLM runs them only with EPLB switched on.
Status AddRedundantExperts(const sim::DeploymentSpec& d, CommandLine* c) {
  if (d.expert.redundant_experts <= 0) return Status::Ok();
  const std::string r = std::to_string(d.expert.redundant_experts);
  const std::string setting = "expert_parallel/redundant_experts " + r;
  if (d.engine == "vllm") {
    CAPPLAN_RETURN_IF_ERROR(c->Add("enable_eplb", "", setting, Need::kRequired));
  }
  return c->Add("num_redundant_experts", r, setting, Need::kRequired);
}

// Weights: as shipped needs no flag; FP8 of a higher-precision checkpoint is
// the engines' online quantization; other formats need a checkpoint made so.
Status AddWeights(const sim::Scenario& s, const sim::DeploymentSpec& d, CommandLine* c) {
  if (!d.weights_per_component.empty()) {
    c->Note("weights_per_component: serve a checkpoint quantized so (--model-path); no engine "
            "flag quantizes per component");
  }
  if (d.weights == "default") return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(models::ModelCard card, models::LoadModelCard(s.model));
  bool as_shipped = true;
  for (models::Component comp : card.QuantizedBy(d.weights)) {
    const auto it = card.checkpoint.find(comp);
    if (it != card.checkpoint.end() && models::DtypeName(it->second.dtype) != d.weights) {
      as_shipped = false;
    }
  }
  if (as_shipped) return Status::Ok();
  if (d.weights == "fp8") {
    return c->Add("quantization", "fp8", "weights fp8", Need::kRequired);
  }
  c->Note("weights " + d.weights + ": the checkpoint ships other precisions; serve one "
          "quantized to " + d.weights + " (pass it as --model-path)");
  return Status::Ok();
}

Status AddMemoryAndBatching(const sim::DeploymentSpec& d, CommandLine* c) {
  const std::string kv = models::DtypeName(d.kv_cache);
  if (kv != "bf16") CAPPLAN_RETURN_IF_ERROR(c->Add("kv_cache_dtype", kv, "kv_cache " + kv, Need::kRequired));
  if (d.mem_fraction_static) {
    const std::string v = Num(*d.mem_fraction_static);
    CAPPLAN_RETURN_IF_ERROR(c->Add("mem_fraction", v, "mem_fraction_static " + v, Need::kComment));
  }
  if (d.max_running_requests) {
    const std::string v = std::to_string(*d.max_running_requests);
    CAPPLAN_RETURN_IF_ERROR(
        c->Add("max_running_requests", v, "max_running_requests " + v, Need::kComment));
  }
  if (d.chunked_prefill_tokens > 0) {
    const std::string v = std::to_string(d.chunked_prefill_tokens);
    const std::string setting = "chunked_prefill_tokens " + v;
    CAPPLAN_RETURN_IF_ERROR(c->Add("enable_chunked_prefill", "", setting, Need::kIfPresent));
    CAPPLAN_RETURN_IF_ERROR(c->Add("chunked_prefill_tokens", v, setting, Need::kComment));
  }
  if (d.page_size > 0) {
    const std::string v = std::to_string(d.page_size);
    CAPPLAN_RETURN_IF_ERROR(c->Add("page_size", v, "page_size " + v, Need::kComment));
  }
  if (d.prefix_cache) {
    CAPPLAN_RETURN_IF_ERROR(*d.prefix_cache
                                ? c->Add("prefix_cache_on", "", "prefix_cache true", Need::kIfPresent)
                                : c->Add("prefix_cache_off", "", "prefix_cache false", Need::kComment));
  }
  return Status::Ok();
}

Status AddExecution(const sim::DeploymentSpec& d, CommandLine* c) {
  if (!d.cuda_graphs) {
    CAPPLAN_RETURN_IF_ERROR(
        c->Add("disable_cuda_graphs", "", "cuda_graphs false", Need::kComment));
  }
  if (d.cuda_graph_max_bs) {
    const std::string v = std::to_string(*d.cuda_graph_max_bs);
    CAPPLAN_RETURN_IF_ERROR(
        c->Add("cuda_graph_max_bs", v, "cuda_graph_max_bs " + v, Need::kComment));
  }
  if (d.overlap_schedule && !*d.overlap_schedule) {
    CAPPLAN_RETURN_IF_ERROR(
        c->Add("disable_overlap_schedule", "", "overlap_schedule false", Need::kComment));
  }
  if (d.nccl_nvls && *d.nccl_nvls) {
    CAPPLAN_RETURN_IF_ERROR(c->Add("nccl_nvls", "", "nccl_nvls true", Need::kComment));
  }
  // The launch flags that choose kernels, as the deployment names them: the
  // simulation priced these kernels, so the command must run them.
  for (const auto& [field, name] : d.launch_backends) {
    CAPPLAN_RETURN_IF_ERROR(c->Add(field, name, field + " " + name, Need::kRequired));
  }
  if (d.expert.all_to_all == models::MoeAllToAll::kDeepEp) {
    // vLLM names the DeepEP kernel family in its backend's value.
    const std::string mode =
        d.engine == "vllm" ? models::DeepEpModeName(d.expert.deepep_mode) : "";
    CAPPLAN_RETURN_IF_ERROR(c->Add("deepep", mode, "expert_parallel deepep", Need::kComment));
  }
  // The scenario parse refused a version without it (micro_batch_overlap).
  if (d.two_batch_overlap) c->AddFlag(d.engine_resolution.profile->micro_batch_overlap.flag);
  // Set where the version's default differs: the scenario parse checked it.
  const models::ExpertSplitRule& split = d.engine_resolution.profile->expert_split;
  if (d.dense_ffn_per_dp_rank.value_or(split.dense_ffn_per_dp_rank) != split.dense_ffn_per_dp_rank) {
    c->AddFlag(split.dense_ffn_per_dp_rank_flag);
  }
  if (d.lm_head_per_dp_rank.value_or(split.lm_head_per_dp_rank) != split.lm_head_per_dp_rank) {
    c->AddFlag(split.lm_head_per_dp_rank_flag);
  }
  if (d.speculative.on()) {
    c->Note(std::string("speculative ") + sim::speculative::MethodName(d.speculative.method) +
            ", " + std::to_string(d.speculative.draft_tokens()) +
            " draft tokens: no flag mapped in " + kFlagsFile +
            "; add the engine's speculative-decoding flags by hand");
  }
  if (d.kv_integrity != sim::KvIntegrity::kNone) {
    c->Note("kv_integrity: capplan's reference engine checks KV pages; serving engines have "
            "no such flag");
  }
  if (d.power_limit_w) {
    c->Note("power_limit_w " + Num(*d.power_limit_w) + ": nvidia-smi -pl " +
            Num(*d.power_limit_w) + " on each GPU before launch");
  }
  return Status::Ok();
}

// vLLM's data parallelism across nodes: each node runs its share of the DP
// ranks, the first node's address joining them (vLLM's data-parallel
// deployment guide: the other nodes add --headless and their first rank).
Status AddVllmDpNodes(const sim::DeploymentSpec& d, CommandLine* c) {
  const int dp = d.dp > 0 ? d.dp : d.tp;
  const int local = d.gpus_per_node / std::max(1, d.tp / dp);
  const std::string n = std::to_string(d.nodes), setting = "nodes " + n;
  CAPPLAN_RETURN_IF_ERROR(
      c->Add("data_parallel_size_local", std::to_string(local), setting, Need::kRequired));
  CAPPLAN_RETURN_IF_ERROR(c->Add("data_parallel_address", "HEAD_IP", setting, Need::kRequired));
  c->Note(setting + ": run on every node; on node i > 0 add --headless --data-parallel-start-rank "
          "i x " + std::to_string(local) + "; HEAD_IP the first node's address");
  if (d.replicas > 1) {
    c->Note("replicas " + std::to_string(d.replicas) + ": run " + std::to_string(d.replicas) +
            " copies of this command behind a router");
  }
  return Status::Ok();
}

Status AddPlacement(const sim::PoolSpec& p, int pools, CommandLine* c) {
  const sim::DeploymentSpec& d = p.deployment;
  if (p.role != schema::PoolRole::kBoth) {
    const std::string mode = schema::PoolRoleName(p.role);
    CAPPLAN_RETURN_IF_ERROR(c->Add("disaggregation_mode", mode, "pd " + mode + " pool",
                                   Need::kComment));
  } else if (pools == 1 && d.phase != sim::Phase::kBoth) {
    c->Note(std::string("phase ") + sim::PhaseName(d.phase) +
            ": the simulation priced one phase; the server runs both");
  }
  if (d.nodes > 1 && d.engine == "vllm" && d.dp_attention) return AddVllmDpNodes(d, c);
  if (d.nodes > 1) {
    const std::string n = std::to_string(d.nodes);
    CAPPLAN_RETURN_IF_ERROR(c->Add("nnodes", n, "nodes " + n, Need::kRequired));
    CAPPLAN_RETURN_IF_ERROR(c->Add("node_rank", "0", "nodes " + n, Need::kRequired));
    CAPPLAN_RETURN_IF_ERROR(c->Add("dist_init_addr", "HEAD_IP:5000", "nodes " + n, Need::kRequired));
    c->Note("nodes " + n + ": run on every node, node rank 0.." + std::to_string(d.nodes - 1) +
            ", HEAD_IP the rank-0 node's address");
  }
  if (d.replicas > 1) {
    c->Note("replicas " + std::to_string(d.replicas) + ": run " + std::to_string(d.replicas) +
            " copies of this command behind a router");
  }
  return Status::Ok();
}

bool IsCardName(const std::string& model) {
  return model.find('/') == std::string::npos && !std::filesystem::exists(model);
}

Result<std::string> PoolCommand(const sim::Scenario& s, const sim::PoolSpec& p,
                                const std::string& model_path) {
  const sim::DeploymentSpec& d = p.deployment;
  const models::EngineResolution& r = d.engine_resolution;
  CAPPLAN_ASSIGN_OR_RETURN(EngineLaunch e, LoadEngineLaunch(d.engine));
  const std::string where = s.origin + ": " + p.pointer;
  CommandLine c(e, d.engine, r, where);
  CAPPLAN_RETURN_IF_ERROR(AddParallelism(d, where, &c));
  CAPPLAN_RETURN_IF_ERROR(AddRedundantExperts(d, &c));
  CAPPLAN_RETURN_IF_ERROR(AddWeights(s, d, &c));
  CAPPLAN_RETURN_IF_ERROR(AddMemoryAndBatching(d, &c));
  CAPPLAN_RETURN_IF_ERROR(AddExecution(d, &c));
  CAPPLAN_RETURN_IF_ERROR(AddPlacement(p, static_cast<int>(s.pools.size()), &c));
  const std::string model = model_path.empty() ? s.model : model_path;
  std::string head = "# " + s.name + (p.name.empty() ? "" : " (" + p.name + " pool)") + ": " +
                     d.engine + " " + r.version + (d.engine_version.empty() ? " (newest known)" : "") +
                     ", " + std::to_string(d.gpus) + " GPUs of " + s.hardware + "\n";
  if (model_path.empty() && IsCardName(s.model)) {
    c.Note(s.model + " is capplan's card name: pass --model-path with the checkpoint's Hugging "
           "Face id or folder");
  }
  return head + c.Render(model);
}

// A search's --out directory stands for its winner: the scenario it searched
// with the winner's configuration set over it.
Result<std::pair<std::string, std::vector<std::string>>> SearchWinner(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "search.json").string();
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  if (!doc.is_object() || !doc.contains("scenario") || !doc["scenario"].is_string()) {
    return Status::Usage(path + ": /scenario: missing; pass a 'capplan search --out' directory");
  }
  if (!doc.contains("winner") || !doc["winner"].is_object() ||
      !doc["winner"].contains("config") || !doc["winner"]["config"].is_object()) {
    return Status::Usage(path + ": /winner: no configuration met the SLOs; nothing to launch");
  }
  std::vector<std::string> sets;
  for (const auto& [k, v] : doc["winner"]["config"].items()) {
    sets.push_back(k + "=" + (v.is_string() ? v.get<std::string>() : v.dump()));
  }
  return std::make_pair(doc["scenario"].get<std::string>(), sets);
}

Status RunLaunch(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description desc(
      "capplan launch SCENARIO.json|SEARCH_DIR [options]\n"
      "Prints the engine command (vllm serve, python -m sglang.launch_server) that realizes\n"
      "the scenario's deployment, or a search's winner, with the flags of its engine\n"
      "release (models/engine_launch_flags.json). Options");
  desc.add_options()("help,h", "show this help")("scenario", po::value<std::string>(),
                                                 "scenario JSON file or `search --out` dir")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a field: dotted.path=value (repeatable), e.g. --set deployment.tp=4")(
      "model-path", po::value<std::string>(),
      "the checkpoint to serve (Hugging Face id or folder); default: the scenario's model");
  po::variables_map vm;
  CAPPLAN_ASSIGN_OR_RETURN(const bool go, ParseFlags("launch", args, desc, "scenario", 1, &vm, ctx));
  if (!go) return Status::Ok();
  if (!vm.count("scenario")) {
    return Status::Usage("launch: missing SCENARIO.json; e.g. capplan launch "
                         "scenarios/kimi-k2.6-kv-fp8.json");
  }
  std::string path = vm["scenario"].as<std::string>();
  std::vector<std::string> sets;
  if (std::filesystem::is_directory(path)) {
    CAPPLAN_ASSIGN_OR_RETURN(auto winner, SearchWinner(path));
    path = winner.first;
    sets = winner.second;
  }
  if (vm.count("set")) {
    for (const std::string& s : vm["set"].as<std::vector<std::string>>()) sets.push_back(s);
  }
  CAPPLAN_ASSIGN_OR_RETURN(auto scenario, sim::LoadScenarioFile(path, sets));
  const std::string model_path = vm.count("model-path") ? vm["model-path"].as<std::string>() : "";
  for (const sim::PoolSpec& p : scenario->pools) {
    CAPPLAN_ASSIGN_OR_RETURN(std::string text, PoolCommand(*scenario, p, model_path));
    *ctx.out << text;
  }
  return Status::Ok();
}

}  // namespace

void RegisterLaunchCommand(CommandTable* table) {
  table->Add({"launch",
              "print the vllm / sglang command that realizes a scenario or a search's winner",
              RunLaunch});
}

}  // namespace capplan::cli
