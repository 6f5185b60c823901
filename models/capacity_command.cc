// `capplan capacity`: memory breakdown per GPU, KV bytes per token, KV
// capacity and concurrent requests for one deployment (issue #2, section 5).
#include <cstdio>
#include <ostream>
#include <sstream>

#include "calibrate/profile.h"
#include "common/json_util.h"
#include "models/capacity_report.h"
#include "models/commands.h"

namespace po = boost::program_options;

namespace capplan {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

Status CheckFlagRange(const char* flag, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi)) {
    std::ostringstream os;
    os << "capacity: " << flag << " must be in [" << lo << ", " << hi << "], got " << v;
    return Status::Usage(os.str());
  }
  return Status::Ok();
}

Status RunCapacity(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description desc("capplan capacity options");
  std::string model, weights = "default", kv = "bf16", engine = "sglang", version, hardware;
  std::vector<std::string> component_weights;
  int64_t gpus = 0, tp = 0, ep = 1, dp = 0, context = 16384, page = 64, chunked = 8192, cgbs = 0;
  double mem_fraction = -1;
  desc.add_options()
      ("help,h", "show these options")
      ("model", po::value(&model), "model card name (see models/cards) or path to a card .json")
      ("gpus", po::value(&gpus), "GPUs in one instance (must equal --tp)")
      ("tp", po::value(&tp), "tensor-parallel degree (default: --gpus)")
      ("ep", po::value(&ep), "expert-parallel degree (divides --tp and the routed experts)")
      ("dp-attention", "SGLang --enable-dp-attention: attention TP = tp/dp, one KV pool per rank")
      ("dp", po::value(&dp), "attention data-parallel ranks with --dp-attention (default: --tp)")
      ("weights", po::value(&weights), "bf16|fp8|int4|default for the card's quantizable set")
      ("component-weights", po::value(&component_weights)->multitoken(),
       "per-component overrides, e.g. experts=int4 attention=fp8")
      ("kv", po::value(&kv), "KV cache dtype: bf16|fp8")
      ("engine", po::value(&engine), "sglang|vllm")
      ("engine-version", po::value(&version), "engine version, e.g. 0.5.2 (default: latest known)")
      ("mem-fraction", po::value(&mem_fraction),
       "SGLang mem_fraction_static or vLLM gpu_memory_utilization (default: the engine's)")
      ("context-tokens", po::value(&context), "context length L of each request (default 16384)")
      ("page-size", po::value(&page), "KV page size in tokens (default 64)")
      ("chunked-prefill", po::value(&chunked), "chunked prefill / max batched tokens (default 8192)")
      ("cuda-graph-max-bs", po::value(&cgbs), "SGLang cuda_graph_max_bs (default: per GPU and TP)")
      ("hardware", po::value(&hardware)->default_value("h200-sxm"), "hardware profile name or path")
      ("table", "one row per shipped card x {bf16, fp8} KV")
      ("json", "print JSON (an object; with --table an array)");
  po::variables_map vm;
  CAPPLAN_RETURN_IF_ERROR(ParseCommandLine("capacity", args, desc, nullptr, &vm));
  if (vm.count("help")) {
    *ctx.out << "usage: capplan capacity --model NAME|PATH --gpus N [--tp N] [options]\n" << desc;
    return Status::Ok();
  }
  const bool table = vm.count("table") > 0;
  if (!table && model.empty()) {
    return Status::Usage("capacity: --model is required (or --table for every shipped card)");
  }
  if (table && !model.empty()) {
    return Status::Usage("capacity: --table covers every shipped card; drop --model");
  }
  if (gpus == 0 && tp == 0) return Status::Usage("capacity: give --gpus N (and optionally --tp N)");
  if (gpus == 0) gpus = tp;
  if (tp == 0) tp = gpus;
  CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--gpus", gpus, 1, 65536));
  CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--tp", tp, 1, 1024));
  CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--ep", ep, 1, 1024));
  CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--context-tokens", context, 1, 1LL << 32));
  CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--page-size", page, 1, 4096));
  CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--chunked-prefill", chunked, 1, 1 << 20));
  CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--cuda-graph-max-bs", cgbs, 0, 1 << 16));
  if (vm.count("dp") && !vm.count("dp-attention")) {
    return Status::Usage("capacity: --dp needs --dp-attention");
  }
  if (vm.count("dp")) CAPPLAN_RETURN_IF_ERROR(CheckFlagRange("--dp", dp, 1, 1024));
  if (vm.count("mem-fraction")) {
    if (!(mem_fraction > 0 && mem_fraction <= 1)) {
      return Status::Usage("capacity: --mem-fraction must be in (0, 1], got " +
                           std::to_string(mem_fraction));
    }
  }

  CapacityQuery q;
  CAPPLAN_ASSIGN_OR_RETURN(HardwareProfile hw, LoadHardwareProfile(hardware));
  q.hardware_name = hw.name;
  q.gpu_memory_bytes = hw.gpu_memory_bytes;
  q.layout.gpus = static_cast<int>(gpus);
  q.layout.tp = static_cast<int>(tp);
  q.layout.ep = static_cast<int>(ep);
  q.layout.dp_attention = vm.count("dp-attention") > 0;
  q.layout.dp = q.layout.dp_attention ? static_cast<int>(dp > 0 ? dp : tp) : 1;
  q.precision.weights = weights;
  for (const std::string& cw : component_weights) {
    const auto eq = cw.find('=');
    if (eq == std::string::npos) {
      return Status::Usage("capacity: --component-weights expects COMPONENT=FORMAT, got '" + cw +
                           "'");
    }
    auto comp = ParseComponent(cw.substr(0, eq));
    if (!comp.ok()) return comp.status().WithPrefix("capacity: --component-weights");
    q.precision.per_component[*comp] = cw.substr(eq + 1);
  }
  auto kv_dtype = ParseDtype(kv);
  if (!kv_dtype.ok()) return kv_dtype.status().WithPrefix("capacity: --kv");
  if (*kv_dtype != Dtype::kBf16 && *kv_dtype != Dtype::kFp8E4m3) {
    return Status::Usage("capacity: --kv must be bf16 or fp8, got '" + kv + "'");
  }
  q.precision.kv_cache = *kv_dtype;
  q.engine.engine = engine;
  q.engine.version = version;
  if (vm.count("mem-fraction")) q.engine.mem_fraction = mem_fraction;
  q.engine.chunked_prefill_tokens = static_cast<int>(chunked);
  q.engine.cuda_graph_max_bs = static_cast<int>(cgbs);
  q.engine.page_size = static_cast<int>(page);
  q.context_tokens = context;
  if (table) return RunCapacityTable(q, vm.count("json") > 0, ctx);

  CAPPLAN_ASSIGN_OR_RETURN(ModelCard card, LoadModelCard(model));
  CAPPLAN_ASSIGN_OR_RETURN(MemoryPlan plan, PlanMemory(card, q.layout, q.precision, q.engine,
                                                       q.gpu_memory_bytes, q.context_tokens));
  if (vm.count("json")) {
    *ctx.out << DumpJson(PlanToJson(card, q, plan)) << "\n";
  } else {
    PrintPlanText(card, q, plan, *ctx.out);
  }
  return Status::Ok();
}

}  // namespace

void RegisterModelsCommands(CommandTable* table) {
  table->Add({"capacity", "per-GPU memory breakdown, KV bytes/token and KV capacity of a deployment",
              RunCapacity});
}

}  // namespace capplan
