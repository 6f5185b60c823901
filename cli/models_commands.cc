// `capplan capacity`: memory breakdown per GPU, KV bytes per token, KV
// capacity and concurrent requests for one deployment.
#include <algorithm>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "common/units.h"
#include "hw/profile.h"
#include "common/json_util.h"
#include "models/capacity_report.h"
#include "models/engine_profile.h"
#include "models/expert_parallel.h"
#include "cli/commands.h"
#include "cli/import_model_command.h"

namespace po = boost::program_options;

namespace capplan::cli {

namespace {


Status CheckFlagRange(const char* flag, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi)) {
    std::ostringstream os;
    os << "capacity: " << flag << " must be in [" << lo << ", " << hi << "], got " << v;
    return Status::Usage(os.str());
  }
  return Status::Ok();
}

// What `--weights <format>` re-quantizes for each shipped card: fp8 and
// int4 for every card, then each format a published checkpoint of the card's
// family is described in (its `quantize` entry: nvfp4, mxfp4, ...).
void PrintQuantizedSets(std::ostream& out) {
  out << "\n--weights FORMAT re-quantizes, per shipped card (the rest keeps its checkpoint "
         "format; embeddings, LM head, routers and norms stay BF16):\n";
  for (const std::string& name : models::ShippedModelNames()) {
    auto card = models::LoadModelCard(name);
    if (!card.ok()) continue;
    out << "  " << name << ":";
    std::vector<std::string> formats = {"fp8", "int4"};
    for (const auto& [f, comps] : card->quantize_by_format) {
      if (std::find(formats.begin(), formats.end(), f) == formats.end()) formats.push_back(f);
    }
    for (const std::string& f : formats) {
      out << "  " << f << " =";
      for (models::Component c : card->QuantizedBy(f)) out << " " << models::ComponentName(c);
      out << ";";
    }
    out << "\n";
  }
}

// The flags of `capplan capacity`, as parsed.
struct CapacityFlags {
  std::string model, weights = "default", kv = "bf16", engine = "sglang", version, hardware, nvls;
  std::vector<std::string> component_weights;
  int64_t gpus = 0, tp = 0, ep = 1, dp = 0, context = 16384, page = 0, chunked = 0, cgbs = 0;
  int64_t redundant_experts = 0;  // all EP ranks together
  double mem_fraction = -1;
};

po::options_description CapacityOptions(CapacityFlags* f) {
  po::options_description desc("capplan capacity options");
  desc.add_options()
      ("help,h", "show these options")
      ("model", po::value(&f->model), "model card name (see models/cards) or path to a card .json")
      ("gpus", po::value(&f->gpus), "GPUs in one instance (must equal --tp)")
      ("tp", po::value(&f->tp), "tensor-parallel degree (default: --gpus)")
      ("ep", po::value(&f->ep),
       "expert-parallel degree (divides --tp; routed + redundant experts split over it as the "
       "engine version splits them)")
      ("ep-redundant-experts", po::value(&f->redundant_experts),
       "EPLB redundant experts over all EP ranks (SGLang --ep-num-redundant-experts, vLLM "
       "EPLB num_redundant_experts): each rank holds (experts + N) / ep experts' weights; "
       "experts + N must divide over --ep as the engine version requires")
      ("dp-attention", "SGLang --enable-dp-attention: attention TP = tp/dp, one KV pool per rank")
      ("deepep", "MoE tokens over DeepEP (deployment.expert_parallel.all_to_all deepep, needs "
                 "--ep = --tp): the shared experts whole on every GPU")
      ("dp", po::value(&f->dp), "attention data-parallel ranks with --dp-attention (default: --tp)")
      ("weights", po::value(&f->weights),
       "default or a format of hw/formats.json weight_choices (bf16, fp8, int4, nvfp4, mxfp4, "
       "...): re-quantizes the components the card lists for that format, as the public "
       "checkpoints of that family are made (see models/README.md; the output prints every "
       "component's format)")
      ("component-weights", po::value(&f->component_weights)->multitoken(),
       "per-component overrides, e.g. experts=int4 attention=fp8")
      ("kv", po::value(&f->kv), "KV cache dtype: a kv_cache name of hw/formats.json (bf16, fp8, "
                                "nvfp4, ...)")
      ("engine", po::value(&f->engine), "serving engine: a profile in models/engines/ (sglang, vllm)")
      ("engine-version", po::value(&f->version),
       "engine version, e.g. 0.4.5.post3 (default: latest known); a version between two known "
       "rule changes uses the earlier rules and says so")
      ("mem-fraction", po::value(&f->mem_fraction),
       "SGLang mem_fraction_static or vLLM gpu_memory_utilization (default: the engine's)")
      ("context-tokens", po::value(&f->context), "context length L of each request (default 16384)")
      ("page-size", po::value(&f->page), "KV page size in tokens (default: the engine's)")
      ("chunked-prefill", po::value(&f->chunked),
       "chunked prefill / max batched tokens (default: the engine's)")
      ("cuda-graph-max-bs", po::value(&f->cgbs), "cuda_graph_max_bs (default: the engine's, per TP)")
      ("nvls", po::value(&f->nvls), "on|off: NCCL NVLS buffers (default: the engine's, TP >= 5)")
      ("explain",
       "print each memory term's rule and source, and each ranged term's effect on the KV pool")
      ("hardware", po::value(&f->hardware)->default_value(hw::kDefaultProfileName), "hardware profile name or path")
      ("table", "one row per shipped card x {bf16, fp8} KV")
      ("json", "print JSON (an object; with --table an array)");
  return desc;
}

// The flags' ranges and combinations; fills in --gpus and --tp from each other.
Status CheckCapacityFlags(const po::variables_map& vm, CapacityFlags* f) {
  const bool table = vm.count("table") > 0;
  if (!table && f->model.empty()) {
    return Status::Usage("capacity: --model is required (or --table for every shipped card)");
  }
  if (table && !f->model.empty()) {
    return Status::Usage("capacity: --table covers every shipped card; drop --model");
  }
  if (f->gpus == 0 && f->tp == 0) {
    return Status::Usage("capacity: give --gpus N (and optionally --tp N)");
  }
  if (f->gpus == 0) f->gpus = f->tp;
  if (f->tp == 0) f->tp = f->gpus;
  CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--gpus", f->gpus, 1, 65536));
  CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--tp", f->tp, 1, 1024));
  CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--ep", f->ep, 1, 1024));
  CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--context-tokens", f->context, 1, 1LL << 32));
  if (vm.count("page-size")) {
    CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--page-size", f->page, 1, 4096));
  }
  if (vm.count("chunked-prefill")) {
    CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--chunked-prefill", f->chunked, 1, 1 << 20));
  }
  CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--cuda-graph-max-bs", f->cgbs, 0, 1 << 16));
  CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--ep-redundant-experts", f->redundant_experts, 0, 1 << 16));
  if (f->redundant_experts > 0 && f->ep < 2) {
    return Status::Usage("capacity: --ep-redundant-experts " +
                         std::to_string(f->redundant_experts) + " needs --ep > 1");
  }
  if (vm.count("dp") && !vm.count("dp-attention")) {
    return Status::Usage("capacity: --dp needs --dp-attention");
  }
  if (vm.count("dp")) CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--dp", f->dp, 1, 1024));
  if (vm.count("mem-fraction") && !(f->mem_fraction > 0 && f->mem_fraction <= 1)) {
    return Status::Usage("capacity: --mem-fraction must be in (0, 1], got " +
                         std::to_string(f->mem_fraction));
  }
  return Status::Ok();
}

// --weights and --component-weights COMPONENT=FORMAT ... as a precision.
Status ParseWeightFlags(const CapacityFlags& f, models::PrecisionChoice* p) {
  p->weights = f.weights;
  for (const std::string& cw : f.component_weights) {
    const auto eq = cw.find('=');
    if (eq == std::string::npos) {
      return Status::Usage("capacity: --component-weights expects COMPONENT=FORMAT, got '" + cw +
                           "'");
    }
    auto comp = models::ParseComponent(cw.substr(0, eq));
    if (!comp.ok()) return comp.status().WithPrefix("capacity: --component-weights");
    p->per_component[*comp] = cw.substr(eq + 1);
  }
  return Status::Ok();
}

// --kv: a KV format of the format table (hw/formats.json kv_cache names).
Result<models::Dtype> ParseKvFlag(const std::string& kv) {
  auto kv_dtype = models::ParseDtype(kv);
  if (!kv_dtype.ok()) return kv_dtype.status().WithPrefix("capacity: --kv");
  CAPPLAN_ASSIGN_OR_RETURN(const hw::FormatTable* formats, hw::GetFormatTable());
  const std::vector<std::string>& kvs = formats->kv_choices;
  if (std::find(kvs.begin(), kvs.end(), models::DtypeName(*kv_dtype)) == kvs.end()) {
    std::string names;
    for (const std::string& n : kvs) names += (names.empty() ? "" : "|") + n;
    return Status::Usage("capacity: --kv must be " + names + ", got '" + kv + "'");
  }
  return *kv_dtype;
}

// The engine's knobs the flags set (zero or unset: the engine's defaults).
Status EngineFlags(const po::variables_map& vm, const CapacityFlags& f, models::EngineMemoryOptions* e) {
  e->engine = f.engine;
  e->version = f.version;
  if (vm.count("mem-fraction")) e->mem_fraction = f.mem_fraction;
  e->chunked_prefill_tokens = f.chunked;
  e->cuda_graph_max_bs = f.cgbs;
  e->page_size = f.page;
  if (!f.nvls.empty()) {
    if (f.nvls != "on" && f.nvls != "off") {
      return Status::Usage("capacity: --nvls must be on or off, got '" + f.nvls + "'");
    }
    e->nvls = f.nvls == "on";
  }
  return Status::Ok();
}

// The query the checked flags describe: hardware, layout, precision, engine.
Result<models::CapacityQuery> CapacityQueryOf(const po::variables_map& vm,
                                              const CapacityFlags& f) {
  models::CapacityQuery q;
  CAPPLAN_ASSIGN_OR_RETURN(hw::HardwareProfile hw, hw::LoadHardwareProfile(f.hardware));
  q.hardware = std::make_shared<const hw::HardwareProfile>(std::move(hw));
  q.hardware_name = q.hardware->name;
  q.device = models::DeviceMemory{q.hardware->gpu_memory_bytes,
                                  q.hardware->gpu_runtime_memory_bytes, q.hardware.get()};
  q.layout.gpus = static_cast<int>(f.gpus);
  q.layout.tp = static_cast<int>(f.tp);
  q.layout.ep = static_cast<int>(f.ep);
  q.layout.expert.redundant_experts = static_cast<int>(f.redundant_experts);
  q.layout.dp_attention = vm.count("dp-attention") > 0;
  if (vm.count("deepep")) q.layout.expert.all_to_all = models::MoeAllToAll::kDeepEp;
  q.layout.dp = q.layout.dp_attention ? static_cast<int>(f.dp > 0 ? f.dp : f.tp) : 1;
  CAPPLAN_RETURN_IF_ERROR(ParseWeightFlags(f, &q.precision));
  CAPPLAN_ASSIGN_OR_RETURN(q.precision.kv_cache, ParseKvFlag(f.kv));
  CAPPLAN_RETURN_IF_ERROR(EngineFlags(vm, f, &q.engine));
  q.context_tokens = f.context;
  return q;
}

// One card's plan, as JSON (with --explain, each term's source and the
// ranged terms' effect) or as text.
void PrintCapacity(const models::ModelCard& card, const models::CapacityQuery& q,
                   const models::MemoryPlan& plan, bool json, bool explain, std::ostream& out) {
  if (!json) {
    models::PrintPlanText(card, q, plan, explain, out);
    return;
  }
  nlohmann::json j = models::PlanToJson(card, q, plan);
  if (explain) {
    nlohmann::json src = nlohmann::json::object();
    for (const models::MemoryTerm& t : plan.terms) src[t.key] = t.source;
    j["memory_term_sources"] = src;
    j["kv_range_terms"] = models::KvRangeTermsToJson(plan);
    nlohmann::json rw = nlohmann::json::array();
    for (const models::ResidentComponent& r : plan.resident_weights) {
      rw.push_back({{"component", models::ComponentName(r.component)},
                    {"implementation", r.implementation},
                    {"rule", r.rule_key + ": " + r.rule},
                    {"shipped_bytes_per_gpu", r.shipped_bytes},
                    {"resident_bytes_per_gpu", r.resident_bytes},
                    {"source", r.source}});
    }
    j["resident_weights"] = rw;
  }
  out << DumpJson(j) << "\n";
}

// --ep and --ep-redundant-experts as the engine version splits experts, and
// where it keeps the dense layers under DP attention.
Status ApplyEngineLayoutRules(const models::ModelCard& card, const CapacityFlags& f,
                              models::CapacityQuery* q) {
  CAPPLAN_ASSIGN_OR_RETURN(models::EngineResolution r, models::ResolveEngine(f.engine, f.version));
  q->layout.dense_ffn_per_dp_rank = r.profile->expert_split.dense_ffn_per_dp_rank;
  const Status s = models::CheckExpertSplit(card, q->layout, *r.profile);
  if (s.ok()) return s;
  const std::string& m = s.message();
  const size_t colon = m.find(": ");
  return Status::Usage("capacity: --ep-redundant-experts: " +
                       (colon == std::string::npos ? m : m.substr(colon + 2)));
}

Status RunCapacity(const std::vector<std::string>& args, CommandContext& ctx) {
  CapacityFlags f;
  const po::options_description desc = CapacityOptions(&f);
  po::variables_map vm;
  CAPPLAN_RETURN_IF_ERROR(ParseCommandLine("capacity", args, desc, nullptr, &vm));
  if (vm.count("help")) {
    *ctx.out << "usage: capplan capacity --model NAME|PATH --gpus N [--tp N] [options]\n" << desc;
    PrintQuantizedSets(*ctx.out);
    return Status::Ok();
  }
  CAPPLAN_RETURN_IF_ERROR(CheckCapacityFlags(vm, &f));
  CAPPLAN_ASSIGN_OR_RETURN(models::CapacityQuery q, CapacityQueryOf(vm, f));
  if (vm.count("table")) return models::RunCapacityTable(q, vm.count("json") > 0, ctx);

  CAPPLAN_ASSIGN_OR_RETURN(models::ModelCard card, models::LoadModelCard(f.model));
  CAPPLAN_RETURN_IF_ERROR(ApplyEngineLayoutRules(card, f, &q));
  CAPPLAN_ASSIGN_OR_RETURN(
      models::MemoryPlan plan,
      models::PlanMemory(card, q.layout, q.precision, q.engine, q.device, q.context_tokens));
  PrintCapacity(card, q, plan, vm.count("json") > 0, vm.count("explain") > 0, *ctx.out);
  return Status::Ok();
}

}  // namespace

void RegisterModelsCommands(CommandTable* table) {
  table->Add({"capacity", "per-GPU memory breakdown, KV bytes/token and KV capacity of a deployment",
              RunCapacity});
  table->Add({"import-model", "a model card from a Hugging Face model folder (config.json, "
                              "quantization config, safetensors index)",
              RunImportModel});
}

}  // namespace capplan::cli
