#include "sim/sweep/search.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
#include <sstream>

#include "common/did_you_mean.h"
#include "common/json_util.h"
#include "sim/sweep/bisect.h"
#include "sim/sweep/parallel_for.h"
#include "sim/sweep/pareto.h"
#include "sim/sweep/smallest_passing.h"
#include "common/progress.h"

namespace capplan::sim::sweep {

namespace {

const std::vector<std::pair<std::string, Objective>>& ObjectiveNames() {
  static const std::vector<std::pair<std::string, Objective>> k = {
      {"cost_per_million_output_tokens", Objective::kCostPerMillionOutputTokens},
      {"gpus", Objective::kGpus},
      {"output_throughput_per_gpu", Objective::kOutputThroughputPerGpu},
      {"output_tokens_per_s_per_mw", Objective::kOutputTokensPerSPerMw},
      {"joules_per_output_token", Objective::kJoulesPerOutputToken},
  };
  return k;
}

Result<double> Number(const schema::RunSummary& summary, const std::string& key) {
  const std::optional<double> v = schema::Metric(summary, key);
  if (!v) return Status::Internal("simulation summary has no numeric '" + key + "'");
  return *v;
}

std::string RateText(double r, const SearchSpace& space) {
  std::ostringstream os;
  os.precision(4);
  os << r << " " << RateUnit(space.rate_path);
  return os.str();
}

nlohmann::json ChecksJson(const std::vector<SloCheck>& checks) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& c : checks) {
    a.push_back({{"slo", c.slo->text},
                 {"metric", c.slo->metric},
                 {"value", c.value},
                 {"bound", c.slo->bound},
                 {"met", c.met},
                 {"slack", c.slack}});
  }
  return a;
}

// One configuration's outcome, filled by a worker thread.
struct Outcome {
  std::optional<PrunedConfig> pruned;
  std::optional<FeasibleConfig> feasible;
  int simulations = 0;
};

}  // namespace

Result<Objective> ParseObjective(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& [n, o] : ObjectiveNames()) {
    if (n == name) return o;
    names.push_back(n);
  }
  return Status::Usage("--objective: unknown objective '" + name + "'" + DidYouMean(name, names));
}

const char* ObjectiveName(Objective o) {
  for (const auto& [n, v] : ObjectiveNames()) {
    if (v == o) return n.c_str();
  }
  return "?";
}

namespace {

// The rate path must exist in the scenario like any grid path.
Status CheckRatePath(const nlohmann::json& base, const SearchSpace& space, const SimHooks& hooks) {
  nlohmann::json probe_doc = base;
  Status st = SetDotted(&probe_doc, space.rate_path, nlohmann::json(space.rate_min).dump(),
                        space.origin);
  if (st.ok()) st = hooks.validate(probe_doc);
  if (!st.ok() && st.code() != StatusCode::kInvalidConfig) {
    return Status::Usage(space.origin + ": /request_rate/path: '" + EchoValue(space.rate_path) +
                         "': " + st.message());
  }
  return Status::Ok();
}

std::string OverBudget(int gpus, int budget) {
  return "uses " + std::to_string(gpus) + " GPUs, more than " +
         "max_total_gpus=" + std::to_string(budget);
}

// The unmet SLOs of a probe's checks, "SLO but got VALUE; ...".
std::string UnmetText(const nlohmann::json& checks) {
  std::string why;
  for (const auto& c : checks) {
    if (c["met"].get<bool>()) continue;
    std::ostringstream os;
    os << c["slo"].get<std::string>() << " but got " << c["value"].get<double>();
    why += (why.empty() ? "" : "; ") + os.str();
  }
  return why;
}

// What binds a feasible configuration's rate: the rate range, or the SLOs
// that fail at the smallest failing rate probed, most violated first (what
// a higher rate would break).
void SetBinding(const BisectResult& b, const SearchSpace& space, FeasibleConfig* f) {
  if (b.hit_max && space.fixed_rate()) {
    f->binding = {{"kind", "fixed_rate"}, {"fixed_per_s", space.rate_max}};
    f->binding_text = "none of the SLOs: they hold at the fixed rate " +
                      RateText(space.rate_max, space);
    return;
  }
  if (b.hit_max) {
    f->binding = {{"kind", "rate_range"}, {"max_req_per_s", space.rate_max}};
    f->binding_text = "none of the SLOs: they still hold at max_req_per_s=" +
                      RateText(space.rate_max, space) + " (raise it in the space file)";
    return;
  }
  nlohmann::json failing = nlohmann::json::array();
  for (const auto& c : b.first_fail->detail["checks"]) {
    if (!c["met"].get<bool>()) failing.push_back(c);
  }
  std::sort(failing.begin(), failing.end(), [](const auto& a, const auto& c) {
    return a["slack"].template get<double>() < c["slack"].template get<double>();
  });
  std::string names;
  for (const auto& c : failing) {
    std::ostringstream os;
    os << c["slo"].get<std::string>() << " (" << c["value"].get<double>() << " at "
       << RateText(b.first_fail->rate, space) << ")";
    names += (names.empty() ? "" : ", ") + os.str();
  }
  f->binding = {{"kind", "slo"}, {"slos", failing}, {"fails_at_req_per_s", b.first_fail->rate}};
  f->binding_text = names;
}

// Throughput per GPU, tokens per second per user and the objective of a
// feasible configuration. Pessimistic ranking: throughput at its interval's
// low end, and the cost of the GPU-hours that throughput needs.
Status Score(const SearchOptions& options, FeasibleConfig* f) {
  CAPPLAN_ASSIGN_OR_RETURN(f->output_throughput_per_gpu,
                           Number(f->summary, "output_throughput_per_gpu"));
  double throughput_scale = 1;
  if (options.pessimistic && f->summary.intervals.count("output_throughput_per_gpu")) {
    CAPPLAN_ASSIGN_OR_RETURN(const double lo, Number(f->summary, "output_throughput_per_gpu_lo"));
    if (f->output_throughput_per_gpu > 0 && lo > 0) {
      throughput_scale = lo / f->output_throughput_per_gpu;
      f->output_throughput_per_gpu = lo;
    }
  }
  CAPPLAN_ASSIGN_OR_RETURN(const double tpot, Number(f->summary, "mean_tpot_ms"));
  f->tokens_per_s_per_user = tpot > 0 ? 1000.0 / tpot : 0;
  switch (options.objective) {
    case Objective::kCostPerMillionOutputTokens: {
      CAPPLAN_ASSIGN_OR_RETURN(f->objective,
                               Number(f->summary, "cost_usd_per_million_output_tokens"));
      f->objective /= throughput_scale;
      break;
    }
    case Objective::kGpus: {
      CAPPLAN_ASSIGN_OR_RETURN(f->objective, Number(f->summary, "gpus"));
      break;
    }
    case Objective::kOutputThroughputPerGpu:
      f->objective = f->output_throughput_per_gpu;
      break;
    case Objective::kOutputTokensPerSPerMw: {
      CAPPLAN_ASSIGN_OR_RETURN(f->objective, Number(f->summary, "output_tokens_per_s_per_mw"));
      f->objective *= throughput_scale;
      break;
    }
    case Objective::kJoulesPerOutputToken: {
      CAPPLAN_ASSIGN_OR_RETURN(f->objective, Number(f->summary, "joules_per_output_token"));
      f->objective /= throughput_scale;
      break;
    }
  }
  return Status::Ok();
}

// One configuration of the space: pruned, or its largest rate meeting
// every SLO (bisection) with its score. Runs on a worker thread.
class PointSearch {
 public:
  PointSearch(const SweepPoint& p, const SearchSpace& space, const SearchOptions& options,
              const SimHooks& hooks, Outcome* out)
      : p_(p), space_(space), options_(options), hooks_(hooks), out_(*out) {}

  Status Run() {
    if (!p_.invalid.empty()) return Prune("invalid", p_.invalid);
    std::optional<int> gpus;
    if (hooks_.prune) {
      CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, WithRate(space_.rate_min));
      auto verdict = hooks_.prune(doc);
      if (!verdict.ok()) {
        if (verdict.status().code() == StatusCode::kInvalidConfig) {
          return Prune("invalid", verdict.status().message());
        }
        return verdict.status().WithPrefix("config " + CanonicalPointJson(p_.grid));
      }
      if (verdict->reason) return Prune("cheap_check", *verdict->reason);
      gpus = verdict->gpus;
    }
    if (space_.max_total_gpus && gpus && *gpus > *space_.max_total_gpus) {
      return Prune("gpu_budget", OverBudget(*gpus, *space_.max_total_gpus));
    }
    BisectOptions bo{space_.rate_min, space_.rate_max, space_.rate_rel_tol, 40};
    auto bisect = BisectRate(bo, [this](double rate) { return Probe(rate); });
    if (!bisect.ok()) {
      if (!sim_error_.empty()) return Prune("simulate", sim_error_);
      return bisect.status();
    }
    return Judge(*bisect);
  }

 private:
  Status Prune(std::string stage, std::string reason) {
    out_.pruned = PrunedConfig{p_.index, p_.id, p_.grid, std::move(stage), std::move(reason)};
    return Status::Ok();
  }

  Result<nlohmann::json> WithRate(double rate) const {
    nlohmann::json doc = p_.doc;
    CAPPLAN_RETURN_IF_ERROR(
        SetDotted(&doc, space_.rate_path, nlohmann::json(rate).dump(), space_.origin));
    return doc;
  }

  Result<RateProbe> Probe(double rate) {
    CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, WithRate(rate));
    ++out_.simulations;
    auto summary = hooks_.run(doc);
    if (!summary.ok()) {
      if (summary.status().code() == StatusCode::kInvalidConfig) {
        sim_error_ = summary.status().message();
        return Status::Invalid(sim_error_);
      }
      return summary.status().WithPrefix("config " + CanonicalPointJson(p_.grid) + " at " +
                                         RateText(rate, space_));
    }
    CAPPLAN_ASSIGN_OR_RETURN(std::vector<SloCheck> checks,
                             CheckSlos(options_.slos, *summary, options_.pessimistic));
    RateProbe rp;
    rp.met = AllMet(checks);
    rp.detail = {{"checks", ChecksJson(checks)}};
    rp.summary = std::move(*summary);
    return rp;
  }

  Status Judge(const BisectResult& b) {
    const RateProbe& any = b.best ? *b.best : *b.first_fail;
    if (space_.max_total_gpus && any.summary.gpus && *any.summary.gpus > *space_.max_total_gpus) {
      return Prune("gpu_budget", OverBudget(*any.summary.gpus, *space_.max_total_gpus));
    }
    if (!b.feasible) {
      const std::string at = space_.fixed_rate() ? "SLOs not met at the fixed rate "
                                                 : "SLOs not met even at min_req_per_s=";
      return Prune("slo", at + RateText(space_.rate_min, space_) + ": " +
                              UnmetText(b.first_fail->detail["checks"]));
    }
    FeasibleConfig f;
    f.index = p_.index;
    f.point_id = p_.id;
    f.grid = p_.grid;
    f.rate = b.best->rate;
    f.summary = b.best->summary;
    f.checks = b.best->detail["checks"];
    f.probes = b.probes;
    SetBinding(b, space_, &f);
    CAPPLAN_RETURN_IF_ERROR(Score(options_, &f));
    out_.feasible = std::move(f);
    return Status::Ok();
  }

  const SweepPoint& p_;
  const SearchSpace& space_;
  const SearchOptions& options_;
  const SimHooks& hooks_;
  Outcome& out_;
  std::string sim_error_;
};

// Ranked by the objective, then (equal objectives, e.g. GPU counts) by
// throughput per GPU, then by index; the Pareto front of the ranked.
void RankFeasible(const SearchOptions& options, SearchResult* result) {
  const bool maximize = options.objective == Objective::kOutputThroughputPerGpu ||
                        options.objective == Objective::kOutputTokensPerSPerMw;
  std::stable_sort(result->ranked.begin(), result->ranked.end(),
                   [&](const FeasibleConfig& a, const FeasibleConfig& b) {
                     if (a.objective != b.objective) {
                       return maximize ? a.objective > b.objective : a.objective < b.objective;
                     }
                     if (a.output_throughput_per_gpu != b.output_throughput_per_gpu) {
                       return a.output_throughput_per_gpu > b.output_throughput_per_gpu;
                     }
                     return a.index < b.index;
                   });
  std::vector<ParetoPoint> pts;
  for (size_t i = 0; i < result->ranked.size(); ++i) {
    pts.push_back({result->ranked[i].tokens_per_s_per_user,
                   result->ranked[i].output_throughput_per_gpu, static_cast<int>(i)});
  }
  for (const ParetoPoint& p : ParetoFront(std::move(pts))) result->pareto.push_back(p.id);
}

}  // namespace

Result<SearchResult> RunSearch(const nlohmann::json& base, const std::string& origin,
                               const SearchSpace& space, const SearchOptions& options,
                               const SimHooks& hooks) {
  if (options.slos.empty()) {
    return Status::Usage("search: give at least one --slo, e.g. --slo ttft_p90_ms<=2000");
  }
  CAPPLAN_RETURN_IF_ERROR(CheckRatePath(base, space, hooks));
  CAPPLAN_ASSIGN_OR_RETURN(SweepPlan plan,
                           BuildSweepPlan(base, origin, space.axes, hooks.validate));
  SearchResult result;
  result.scenario_origin = origin;
  result.space_origin = space.origin;
  result.objective = options.objective;
  result.pessimistic = options.pessimistic;
  result.paths = plan.paths;
  result.configs = static_cast<int64_t>(plan.points.size());
  result.top_n = space.top_n;
  result.rate_path = space.rate_path;
  result.fixed_rate = space.fixed_rate();
  for (const Slo& s : options.slos) result.slo_texts.push_back(s.text);

  std::vector<Outcome> outcomes(plan.points.size());
  ProgressBar bar(options.progress, result.configs, "search");
  const Status st = ParallelFor(result.configs, options.jobs, [&](int64_t i) -> Status {
    const size_t k = static_cast<size_t>(i);
    CAPPLAN_RETURN_IF_ERROR(PointSearch(plan.points[k], space, options, hooks, &outcomes[k]).Run());
    bar.Tick();
    return Status::Ok();
  });
  bar.Finish();
  CAPPLAN_RETURN_IF_ERROR(st);
  for (Outcome& o : outcomes) {
    result.simulations += o.simulations;
    if (o.pruned) result.pruned.push_back(std::move(*o.pruned));
    if (o.feasible) result.ranked.push_back(std::move(*o.feasible));
  }
  RankFeasible(options, &result);
  result.smallest_passing_axis = space.smallest_passing.value_or("");
  result.smallest_passing = FindSmallestPassing(space, result);
  return result;
}

}  // namespace capplan::sim::sweep
