#include "sim/sweep/sim_hooks.h"

#include <algorithm>
#include <cstdio>

#include "common/json_util.h"
#include "sim/prepared_run.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "sim/step_pricer.h"

namespace capplan::sim::sweep {

namespace {

// The checks a planner does on paper before simulating one deployment, on
// the simulator's own preparation of the run (PrepareRun: the model shard
// and the engine's KV pool, no simulation): the layout is legal, the
// weights fit in a GPU, the longest request fits in one attention rank's KV
// pool (else it can never be admitted), and the pool holds the concurrency
// the deployment asks for at the workload's mean context. A request keeps
// input + output tokens in a co-located or decode pool, its prompt only in a
// prefill pool (`prompt_only`).
Result<PruneVerdict> PoolChecks(const Scenario& s, size_t pool) {
  PruneVerdict v;
  const DeploymentSpec& d = s.pools[pool].deployment;
  const bool prompt_only = s.pools[pool].role == schema::PoolRole::kPrefill;
  v.gpus = d.gpus * d.replicas;
  auto prepared = PrepareRun(s, pool, RunOptions{});
  if (!prepared.ok()) {
    if (prepared.status().code() == StatusCode::kInvalidConfig) {
      v.reason = prepared.status().message();  // weights do not fit, TP does not divide heads, ...
      return v;
    }
    return prepared.status();
  }
  const SimConfig& cfg = (*prepared)->config();
  double mean_context = 0;
  int64_t longest = 0;
  for (const RequestSpec& r : s.workload.requests) {
    const int64_t kept = r.input_tokens + (prompt_only ? 0 : r.output_tokens);
    mean_context += static_cast<double>(kept);
    longest = std::max(longest, kept);
  }
  if (!s.workload.requests.empty()) mean_context /= static_cast<double>(s.workload.requests.size());
  char buf[320];
  if (longest > cfg.kv_tokens_per_rank) {
    std::snprintf(buf, sizeof(buf),
                  "KV pool holds %lld tokens per attention rank, fewer than the longest "
                  "request's %lld tokens: it could never be admitted",
                  static_cast<long long>(cfg.kv_tokens_per_rank), static_cast<long long>(longest));
    v.reason = buf;
    return v;
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
  const int64_t capacity = cfg.kv_tokens_per_rank * cfg.ranks_per_replica;
  const double need = static_cast<double>(concurrency) * mean_context;
  if (concurrency > 0 && static_cast<double>(capacity) < need) {
    std::snprintf(buf, sizeof(buf),
                  "KV pool holds %lld tokens per replica, fewer than %lld concurrent requests x "
                  "%.0f mean context tokens = %.0f",
                  static_cast<long long>(capacity), static_cast<long long>(concurrency),
                  mean_context, need);
    v.reason = buf;
  }
  return v;
}

// Every pool: a point is dropped when any pool fails its checks (with
// several pools the reason names the first that fails), and it uses the GPUs
// of all.
Result<PruneVerdict> CheapChecks(const Scenario& s) {
  PruneVerdict v;
  v.gpus = 0;
  for (size_t i = 0; i < s.pools.size(); ++i) {
    CAPPLAN_ASSIGN_OR_RETURN(PruneVerdict one, PoolChecks(s, i));
    *v.gpus += *one.gpus;
    if (one.reason && !v.reason) {
      v.reason = s.pools.size() > 1 ? s.pools[i].name + " pool: " + *one.reason : *one.reason;
    }
  }
  return v;
}

}  // namespace

SimHooks RealSimHooks(const std::string& origin, bool fast_forward) {
  SimHooks h;
  h.validate = [origin](const nlohmann::json& doc) -> Status {
    return ParseScenario(doc, origin).status();
  };
  // The points' runs share step prices: probes of one configuration at
  // other rates (and points differing only in the workload) price alike.
  auto prices = std::make_shared<StepPriceCache>();
  h.run = [origin, fast_forward, prices](const nlohmann::json& doc) -> Result<schema::RunSummary> {
    CAPPLAN_ASSIGN_OR_RETURN(auto scenario, ParseScenario(doc, origin));
    RunOptions opt;
    opt.fast_forward = fast_forward;
    opt.price_cache = prices.get();
    CAPPLAN_ASSIGN_OR_RETURN(RunResult r, RunScenario(*scenario, opt));
    return std::move(r.summary);
  };
  h.prune = [origin](const nlohmann::json& doc) -> Result<PruneVerdict> {
    CAPPLAN_ASSIGN_OR_RETURN(auto scenario, ParseScenario(doc, origin));
    return CheapChecks(*scenario);
  };
  return h;
}

// The base document exactly as `capplan simulate` reads it (the simulator's
// own loaders apply --set and check it), so a search or sweep starts from the
// same scenario a single run would.
Result<nlohmann::json> LoadBaseScenario(const std::string& path,
                                        const std::vector<std::string>& sets) {
  CAPPLAN_ASSIGN_OR_RETURN(auto scenario, LoadScenarioFile(path, sets));
  return scenario->doc;
}

}  // namespace capplan::sim::sweep
