#include "sim/sweep/sim_hooks.h"

#include <cstdio>

#include "calibrate/profile.h"
#include "models/card.h"
#include "models/memory.h"
#include "sim/scenario.h"
#include "sim/simulate.h"

namespace capplan {

namespace {

std::string Gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}

// The checks a planner does on paper before simulating: the layout is legal,
// the weights fit in a GPU, and the KV pool holds the concurrency the
// deployment asks for at the workload's mean context length.
Result<PruneVerdict> CheapChecks(const Scenario& s) {
  PruneVerdict v;
  const DeploymentSpec& d = s.deployment;
  v.gpus = d.gpus * d.replicas;
  CAPPLAN_ASSIGN_OR_RETURN(ModelCard card, LoadModelCard(s.model));
  CAPPLAN_ASSIGN_OR_RETURN(HardwareProfile hw, LoadHardwareProfile(s.hardware));
  ParallelLayout layout;
  layout.gpus = d.gpus;
  layout.tp = d.tp;
  layout.ep = d.ep;
  layout.dp_attention = d.dp_attention;
  layout.dp = d.dp_attention ? (d.dp > 0 ? d.dp : d.tp) : 1;
  PrecisionChoice choice;
  choice.weights = d.weights;
  for (const auto& [comp, fmt] : d.weights_per_component) {
    CAPPLAN_ASSIGN_OR_RETURN(Component c, ParseComponent(comp));
    choice.per_component[c] = fmt;
  }
  CAPPLAN_ASSIGN_OR_RETURN(choice.kv_cache, ParseDtype(d.kv_cache));
  EngineMemoryOptions eng;
  eng.engine = d.engine;
  eng.version = d.engine_version;
  eng.mem_fraction = d.mem_fraction_static;
  eng.chunked_prefill_tokens = static_cast<int>(d.chunked_prefill_tokens);
  eng.cuda_graph_max_bs = d.cuda_graph_max_bs ? static_cast<int>(*d.cuda_graph_max_bs) : 0;
  eng.page_size = static_cast<int>(d.page_size);
  double mean_context = 0;
  for (const RequestSpec& r : s.workload.requests) {
    mean_context += static_cast<double>(r.input_tokens + r.output_tokens);
  }
  if (!s.workload.requests.empty()) mean_context /= static_cast<double>(s.workload.requests.size());
  const int64_t context = std::max<int64_t>(1, static_cast<int64_t>(mean_context));
  auto plan = PlanMemory(card, layout, choice, eng, hw.gpu_memory_bytes, context);
  if (!plan.ok()) {
    if (plan.status().code() == StatusCode::kInvalidConfig) {
      v.reason = plan.status().message();  // weights do not fit, TP does not divide heads, ...
      return v;
    }
    return plan.status();
  }
  // The concurrency the deployment must hold per replica: its own cap when
  // set, else the closed-loop concurrency (or open-loop cap) spread over the
  // replicas. Without either there is nothing to check on paper.
  int64_t concurrency = 0;
  if (d.max_running_requests) {
    concurrency = *d.max_running_requests;
  } else if (s.workload.concurrency > 0) {
    concurrency = (s.workload.concurrency + d.replicas - 1) / d.replicas;
  }
  const double need = static_cast<double>(concurrency) * mean_context;
  if (concurrency > 0 && static_cast<double>(plan->kv_capacity_tokens) < need) {
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "KV pool holds %lld tokens per replica (%s per GPU), fewer than %lld "
                  "concurrent requests x %.0f mean context tokens = %.0f",
                  static_cast<long long>(plan->kv_capacity_tokens),
                  Gib(plan->kv_pool_bytes_per_gpu).c_str(), static_cast<long long>(concurrency),
                  mean_context, need);
    v.reason = buf;
  }
  return v;
}

}  // namespace

SimHooks RealSimHooks(const std::string& origin) {
  SimHooks h;
  h.validate = [origin](const nlohmann::json& doc) -> Status {
    return ParseScenario(doc, origin).status();
  };
  h.run = [origin](const nlohmann::json& doc) -> Result<nlohmann::json> {
    CAPPLAN_ASSIGN_OR_RETURN(auto scenario, ParseScenario(doc, origin));
    CAPPLAN_ASSIGN_OR_RETURN(RunResult r, RunScenario(*scenario, RunOptions{}));
    return std::move(r.summary);
  };
  h.prune = [origin](const nlohmann::json& doc) -> Result<PruneVerdict> {
    CAPPLAN_ASSIGN_OR_RETURN(auto scenario, ParseScenario(doc, origin));
    return CheapChecks(*scenario);
  };
  return h;
}

}  // namespace capplan
