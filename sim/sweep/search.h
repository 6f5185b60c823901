// SLO-constrained configuration search: for every configuration of a search
// space, cheap checks first (invalid layout, weights do not fit, KV pool too
// small for the concurrency, GPU budget), then the largest request rate that
// meets every SLO by bisection; configurations ranked by an objective, plus
// the Pareto set of output tokens/s/GPU vs tokens/s/user.
#ifndef CAPPLAN_SIM_SWEEP_SEARCH_H_
#define CAPPLAN_SIM_SWEEP_SEARCH_H_

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "sim/sweep/grid.h"
#include "sim/sweep/hooks.h"
#include "sim/sweep/search_space.h"
#include "sim/sweep/slo.h"

namespace capplan::sim::sweep {

enum class Objective {
  kCostPerMillionOutputTokens,
  kGpus,
  kOutputThroughputPerGpu,
  kOutputTokensPerSPerMw,  // per provisioned MW (sim/energy.h), maximized
  kJoulesPerOutputToken,
};
// "cost_per_million_output_tokens" | "gpus" | "output_throughput_per_gpu";
// unknown names get did-you-mean.
Result<Objective> ParseObjective(const std::string& name);
const char* ObjectiveName(Objective o);

struct SearchOptions {
  Objective objective = Objective::kCostPerMillionOutputTokens;
  std::vector<Slo> slos;
  // Check SLOs and rank by the unfavourable end of each prediction interval.
  bool pessimistic = false;
  int jobs = 0;
  std::ostream* progress = nullptr;
};

struct PrunedConfig {
  int64_t index = 0;
  std::string point_id;
  GridAssignment grid;
  // "invalid" (impossible layout), "cheap_check" (weights / KV capacity),
  // "gpu_budget", "simulate" (the simulator rejected it), "slo" (SLOs fail
  // even at the minimum rate).
  std::string stage;
  std::string reason;
};

struct FeasibleConfig {
  int64_t index = 0;
  std::string point_id;
  GridAssignment grid;
  double rate = 0;            // largest passing request rate probed, req/s
  schema::RunSummary summary;  // simulation at that rate
  nlohmann::json checks;      // SLO checks at that rate
  nlohmann::json binding;     // what stops a higher rate
  std::string binding_text;
  int probes = 0;
  double objective = 0;
  double output_throughput_per_gpu = 0;
  double tokens_per_s_per_user = 0;  // 1000 / mean_tpot_ms (AIConfigurator's definition)
};

// The answer to "how little of this axis is enough" (SearchSpace::
// smallest_passing) for one setting of the other axes.
struct SmallestPassing {
  GridAssignment others;  // the other axes' values, in path order
  // The first value of the axis, in the space's order, whose configuration
  // meets every SLO; null when none does.
  nlohmann::json value;
  int ranked_index = -1;  // that configuration in SearchResult::ranked; -1: none
};

struct SearchResult {
  std::string scenario_origin, space_origin;
  Objective objective = Objective::kCostPerMillionOutputTokens;
  bool pessimistic = false;
  std::vector<std::string> slo_texts;
  std::vector<std::string> paths;
  int64_t configs = 0;
  int64_t simulations = 0;
  std::vector<FeasibleConfig> ranked;  // best first
  std::vector<int> pareto;             // indices into ranked, by tokens/s/user ascending
  std::vector<PrunedConfig> pruned;    // in space order
  std::string smallest_passing_axis;   // empty: the space names none
  std::vector<SmallestPassing> smallest_passing;  // by first configuration index
  std::string rate_path;
  bool fixed_rate = false;  // one rate for every configuration, no bisection
  int top_n = 5;
};

Result<SearchResult> RunSearch(const nlohmann::json& base, const std::string& origin,
                               const SearchSpace& space, const SearchOptions& options,
                               const SimHooks& hooks);

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_SEARCH_H_
