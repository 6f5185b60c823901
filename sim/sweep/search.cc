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
#include "common/progress.h"

namespace capplan::sim::sweep {

namespace {

const std::vector<std::pair<std::string, Objective>>& ObjectiveNames() {
  static const std::vector<std::pair<std::string, Objective>> k = {
      {"cost_per_million_output_tokens", Objective::kCostPerMillionOutputTokens},
      {"gpus", Objective::kGpus},
      {"output_throughput_per_gpu", Objective::kOutputThroughputPerGpu},
  };
  return k;
}

Result<double> Number(const schema::RunSummary& summary, const std::string& key) {
  const std::optional<double> v = schema::Metric(summary, key);
  if (!v) return Status::Internal("simulation summary has no numeric '" + key + "'");
  return *v;
}

std::string RateText(double r) {
  std::ostringstream os;
  os.precision(4);
  os << r << " req/s";
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

Result<SearchResult> RunSearch(const nlohmann::json& base, const std::string& origin,
                               const SearchSpace& space, const SearchOptions& options,
                               const SimHooks& hooks) {
  if (options.slos.empty()) {
    return Status::Usage("search: give at least one --slo, e.g. --slo ttft_p90_ms<=2000");
  }
  // The rate path must exist in the scenario like any grid path.
  {
    nlohmann::json probe_doc = base;
    Status st = SetDotted(&probe_doc, space.rate_path, nlohmann::json(space.rate_min).dump(),
                          space.origin);
    if (st.ok()) st = hooks.validate(probe_doc);
    if (!st.ok() && st.code() != StatusCode::kInvalidConfig) {
      return Status::Usage(space.origin + ": /request_rate/path: '" + space.rate_path +
                           "': " + st.message());
    }
  }
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
  for (const Slo& s : options.slos) result.slo_texts.push_back(s.text);

  std::vector<Outcome> outcomes(plan.points.size());
  ProgressBar bar(options.progress, result.configs, "search");
  const Status st = ParallelFor(result.configs, options.jobs, [&](int64_t i) -> Status {
    const SweepPoint& p = plan.points[static_cast<size_t>(i)];
    Outcome& out = outcomes[static_cast<size_t>(i)];
    auto prune = [&](std::string stage, std::string reason) {
      out.pruned = PrunedConfig{p.index, p.id, p.grid, std::move(stage), std::move(reason)};
      bar.Tick();
      return Status::Ok();
    };
    if (!p.invalid.empty()) return prune("invalid", p.invalid);
    auto with_rate = [&](double rate) -> Result<nlohmann::json> {
      nlohmann::json doc = p.doc;
      CAPPLAN_RETURN_IF_ERROR(
          SetDotted(&doc, space.rate_path, nlohmann::json(rate).dump(), space.origin));
      return doc;
    };
    std::optional<int> gpus;
    if (hooks.prune) {
      CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, with_rate(space.rate_min));
      auto verdict = hooks.prune(doc);
      if (!verdict.ok()) {
        if (verdict.status().code() == StatusCode::kInvalidConfig) {
          return prune("invalid", verdict.status().message());
        }
        return verdict.status().WithPrefix("config " + CanonicalPointJson(p.grid));
      }
      if (verdict->reason) return prune("cheap_check", *verdict->reason);
      gpus = verdict->gpus;
    }
    if (space.max_total_gpus && gpus && *gpus > *space.max_total_gpus) {
      return prune("gpu_budget", "uses " + std::to_string(*gpus) + " GPUs, more than " +
                                     "max_total_gpus=" + std::to_string(*space.max_total_gpus));
    }
    std::string sim_error;
    BisectOptions bo{space.rate_min, space.rate_max, space.rate_rel_tol, 40};
    auto probe = [&](double rate) -> Result<RateProbe> {
      CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, with_rate(rate));
      ++out.simulations;
      auto summary = hooks.run(doc);
      if (!summary.ok()) {
        if (summary.status().code() == StatusCode::kInvalidConfig) {
          sim_error = summary.status().message();
          return Status::Invalid(sim_error);
        }
        return summary.status().WithPrefix("config " + CanonicalPointJson(p.grid) + " at " +
                                           RateText(rate));
      }
      CAPPLAN_ASSIGN_OR_RETURN(std::vector<SloCheck> checks, CheckSlos(options.slos, *summary, options.pessimistic));
      RateProbe rp;
      rp.met = AllMet(checks);
      rp.detail = {{"checks", ChecksJson(checks)}};
      rp.summary = std::move(*summary);
      return rp;
    };
    auto bisect = BisectRate(bo, probe);
    if (!bisect.ok()) {
      if (!sim_error.empty()) return prune("simulate", sim_error);
      return bisect.status();
    }
    const BisectResult& b = *bisect;
    const RateProbe& any = b.best ? *b.best : *b.first_fail;
    if (space.max_total_gpus && any.summary.gpus) {
      const int used = *any.summary.gpus;
      if (used > *space.max_total_gpus) {
        return prune("gpu_budget", "uses " + std::to_string(used) + " GPUs, more than " +
                                       "max_total_gpus=" + std::to_string(*space.max_total_gpus));
      }
    }
    if (!b.feasible) {
      std::string why;
      for (const auto& c : b.first_fail->detail["checks"]) {
        if (c["met"].get<bool>()) continue;
        std::ostringstream os;
        os << c["slo"].get<std::string>() << " but got " << c["value"].get<double>();
        why += (why.empty() ? "" : "; ") + os.str();
      }
      return prune("slo", "SLOs not met even at min_req_per_s=" + RateText(space.rate_min) +
                              ": " + why);
    }
    FeasibleConfig f;
    f.index = p.index;
    f.point_id = p.id;
    f.grid = p.grid;
    f.rate = b.best->rate;
    f.summary = b.best->summary;
    f.checks = b.best->detail["checks"];
    f.probes = b.probes;
    if (b.hit_max) {
      f.binding = {{"kind", "rate_range"}, {"max_req_per_s", space.rate_max}};
      f.binding_text = "none of the SLOs: they still hold at max_req_per_s=" +
                       RateText(space.rate_max) + " (raise it in the space file)";
    } else {
      // The SLOs that fail at the smallest failing rate probed, most violated
      // first: they are what a higher rate would break.
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
           << RateText(b.first_fail->rate) << ")";
        names += (names.empty() ? "" : ", ") + os.str();
      }
      f.binding = {{"kind", "slo"},
                   {"slos", failing},
                   {"fails_at_req_per_s", b.first_fail->rate}};
      f.binding_text = names;
    }
    CAPPLAN_ASSIGN_OR_RETURN(f.output_throughput_per_gpu,
                             Number(f.summary, "output_throughput_per_gpu"));
    // Pessimistic ranking: throughput at its interval's low end, and the cost
    // of the GPU-hours that throughput needs.
    double throughput_scale = 1;
    if (options.pessimistic && f.summary.intervals.count("output_throughput_per_gpu")) {
      CAPPLAN_ASSIGN_OR_RETURN(const double lo, Number(f.summary, "output_throughput_per_gpu_lo"));
      if (f.output_throughput_per_gpu > 0 && lo > 0) {
        throughput_scale = lo / f.output_throughput_per_gpu;
        f.output_throughput_per_gpu = lo;
      }
    }
    CAPPLAN_ASSIGN_OR_RETURN(const double tpot, Number(f.summary, "mean_tpot_ms"));
    f.tokens_per_s_per_user = tpot > 0 ? 1000.0 / tpot : 0;
    switch (options.objective) {
      case Objective::kCostPerMillionOutputTokens: {
        CAPPLAN_ASSIGN_OR_RETURN(f.objective,
                                 Number(f.summary, "cost_usd_per_million_output_tokens"));
        f.objective /= throughput_scale;
        break;
      }
      case Objective::kGpus: {
        CAPPLAN_ASSIGN_OR_RETURN(f.objective, Number(f.summary, "gpus"));
        break;
      }
      case Objective::kOutputThroughputPerGpu:
        f.objective = f.output_throughput_per_gpu;
        break;
    }
    out.feasible = std::move(f);
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
  const bool maximize = options.objective == Objective::kOutputThroughputPerGpu;
  std::stable_sort(result.ranked.begin(), result.ranked.end(),
                   [&](const FeasibleConfig& a, const FeasibleConfig& b) {
                     if (a.objective != b.objective) {
                       return maximize ? a.objective > b.objective : a.objective < b.objective;
                     }
                     // Same objective (e.g. equal GPU counts): more throughput per GPU wins.
                     if (a.output_throughput_per_gpu != b.output_throughput_per_gpu) {
                       return a.output_throughput_per_gpu > b.output_throughput_per_gpu;
                     }
                     return a.index < b.index;
                   });
  std::vector<ParetoPoint> pts;
  for (size_t i = 0; i < result.ranked.size(); ++i) {
    pts.push_back({result.ranked[i].tokens_per_s_per_user,
                   result.ranked[i].output_throughput_per_gpu, static_cast<int>(i)});
  }
  for (const ParetoPoint& p : ParetoFront(std::move(pts))) result.pareto.push_back(p.id);
  return result;
}

}  // namespace capplan::sim::sweep
