// `capplan sweep SCENARIO.json --grid path=v1,v2 [...] --out DIR [--jobs N]
//    [--plan] [--shard-index I --shard-count N]` and `capplan sweep --merge DIR`;
// `capplan search SCENARIO.json --slo METRIC<=X [...] --space SPACE.json
//    --out DIR [--objective NAME] [--jobs N]`.
#include "cli/commands.h"

#include <ostream>

#include "cli/parse_flags.h"
#include "cli/workload_flags.h"
#include "common/json_util.h"
#include "sim/sweep/grid.h"
#include "sim/sweep/search.h"
#include "sim/sweep/search_report.h"
#include "sim/sweep/shard.h"
#include "sim/sweep/sim_hooks.h"
#include "sim/sweep/sweep_runner.h"

namespace capplan::cli {

namespace po = boost::program_options;

namespace {

std::vector<std::string> Strings(const po::variables_map& vm, const char* key) {
  return vm.count(key) ? vm[key].as<std::vector<std::string>>() : std::vector<std::string>{};
}

// --set, then the workload shorthands (cli/workload_flags.h).
std::vector<std::string> Sets(const po::variables_map& vm) {
  std::vector<std::string> sets = Strings(vm, "set");
  for (std::string& s : WorkloadFlagSets(vm)) sets.push_back(std::move(s));
  return sets;
}

po::options_description SweepOptions() {
  po::options_description desc(
      "capplan sweep SCENARIO.json --grid dotted.path=v1,v2,... [--grid ...] --out DIR\n"
      "capplan sweep --merge DIR\n"
      "Runs the cross product of the grids, one simulation per point, on a thread pool;\n"
      "writes DIR/<point-id>.json per point and DIR/sweep.csv; finished points are\n"
      "skipped, so an interrupted sweep resumes (sim/sweep/README.md).\nOptions");
  desc.add_options()("help,h", "show this help")("scenario", po::value<std::string>(),
                                                 "scenario JSON file")(
      "grid", po::value<std::vector<std::string>>()->composing(),
      "dotted.path=v1,v2,... (repeatable); values parse like --set")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a base-scenario field: dotted.path=value (repeatable)")(
      "out", po::value<std::string>(), "output directory (shared by all shards)")(
      "jobs,j", po::value<int>(), "simulations in parallel (default: all cores)")(
      "no-fast-forward", "simulate every decode iteration as an event (simulate --help)")(
      "plan", "only write DIR/manifest.jsonl (one point per line) and exit")(
      "shard-index", po::value<int>(),
      "run points with index % shard-count == shard-index (default: SLURM_ARRAY_TASK_ID "
      "or JOB_COMPLETION_INDEX)")(
      "shard-count", po::value<int>(),
      "number of shards (default: SLURM_ARRAY_TASK_COUNT or CAPPLAN_SHARD_COUNT)")(
      "merge", po::value<std::string>(), "combine the per-point files of DIR into DIR/sweep.csv");
  return desc;
}

// `capplan sweep --merge DIR`: the shards' per-point files into DIR/sweep.csv.
Status RunSweepMerge(const po::variables_map& vm, CommandContext& ctx) {
  if (vm.count("scenario") || vm.count("grid") || vm.count("out")) {
    return Status::Usage(
        "sweep --merge DIR takes no scenario, --grid or --out; the "
        "manifest in DIR says what to merge");
  }
  const std::string dir = vm["merge"].as<std::string>();
  CAPPLAN_ASSIGN_OR_RETURN(sim::sweep::MergeStats m, sim::sweep::MergeSweep(dir));
  *ctx.out << "merged " << m.points << " points (" << m.ok << " ok, " << m.invalid
           << " invalid) into " << dir << "/sweep.csv\n";
  return Status::Ok();
}

void PrintSweepStats(const sim::sweep::SweepStats& s, const sim::sweep::SweepOptions& opt,
                     CommandContext& ctx) {
  *ctx.out << "sweep: " << s.points << " points";
  if (opt.shard.count > 1) {
    *ctx.out << ", shard " << opt.shard.index << "/" << opt.shard.count << " (" << opt.shard.source
             << ") has " << s.in_shard;
  }
  *ctx.out << "; simulated " << s.ran << ", skipped " << s.skipped << " already done, " << s.invalid
           << " invalid";
  if (s.merged) {
    *ctx.out << "; results in " << opt.out_dir << "/sweep.csv\n";
  } else {
    *ctx.out << "; when every shard is done: capplan sweep --merge " << opt.out_dir << "\n";
  }
}

Status RunSweepCommand(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description desc = SweepOptions();
  AddWorkloadFlags(desc);
  po::variables_map vm;
  CAPPLAN_ASSIGN_OR_RETURN(const bool go,
                           ParseFlags("sweep", args, desc, "scenario", 1, &vm, ctx));
  if (!go) return Status::Ok();
  if (vm.count("merge")) return RunSweepMerge(vm, ctx);
  if (!vm.count("scenario")) {
    return Status::Usage(
        "sweep: missing SCENARIO.json; e.g. capplan sweep scenario.json "
        "--grid deployment.tp=4,8 --out sweep_out");
  }
  if (!vm.count("out")) return Status::Usage("sweep: --out DIR is required");
  const std::string path = vm["scenario"].as<std::string>();
  const std::string out = vm["out"].as<std::string>();
  std::vector<sim::sweep::GridAxis> axes;
  for (const std::string& g : Strings(vm, "grid")) {
    CAPPLAN_ASSIGN_OR_RETURN(sim::sweep::GridAxis a, sim::sweep::ParseGridFlag(g));
    axes.push_back(std::move(a));
  }
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json base,
                           sim::sweep::LoadBaseScenario(path, Sets(vm)));
  const sim::sweep::SimHooks hooks = sim::sweep::RealSimHooks(path, !vm.count("no-fast-forward"));
  // Each point is parsed once, by its run (in its shard, on the pool): the
  // plan checks each --grid value alone, and a combination that only fails
  // together is reported when its point runs (sweep_runner.h).
  CAPPLAN_ASSIGN_OR_RETURN(sim::sweep::SweepPlan plan,
                           sim::sweep::BuildSweepPlan(base, path, axes, hooks.validate,
                                                      sim::sweep::PointChecks::kAxisValuesOnly));
  if (vm.count("plan")) {
    CAPPLAN_RETURN_IF_ERROR(sim::sweep::WriteSweepManifest(plan, out));
    *ctx.out << "wrote " << out << "/manifest.jsonl (" << plan.points.size() << " points)\n";
    return Status::Ok();
  }
  std::optional<int> index, count;
  if (vm.count("shard-index")) index = vm["shard-index"].as<int>();
  if (vm.count("shard-count")) count = vm["shard-count"].as<int>();
  sim::sweep::SweepOptions opt;
  CAPPLAN_ASSIGN_OR_RETURN(opt.shard,
                           sim::sweep::ResolveShard(index, count, sim::sweep::ProcessEnv()));
  opt.out_dir = out;
  opt.jobs = vm.count("jobs") ? vm["jobs"].as<int>() : 0;
  if (vm.count("jobs") && opt.jobs < 1) return Status::Usage("--jobs: must be >= 1");
  opt.progress = ctx.stderr_is_tty ? ctx.err : nullptr;
  CAPPLAN_ASSIGN_OR_RETURN(sim::sweep::SweepStats s, sim::sweep::RunSweep(plan, hooks, opt));
  PrintSweepStats(s, opt, ctx);
  return Status::Ok();
}

Status RunSearchCommand(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description desc(
      "capplan search SCENARIO.json --slo METRIC<=VALUE [--slo ...] --space SPACE.json --out DIR\n"
      "Finds the best configurations of the space under the SLOs: for each, the largest\n"
      "request rate meeting every SLO (bisection), after cheap pruning (weights fit, KV holds\n"
      "the concurrency). Writes DIR/search.json and DIR/pruned.csv.\nOptions");
  desc.add_options()("help,h", "show this help")("scenario", po::value<std::string>(),
                                                 "scenario JSON file")(
      "slo", po::value<std::vector<std::string>>()->composing(),
      "METRIC<=VALUE (repeatable), e.g. ttft_p90_ms<=2000 tpot_p90_ms<=50")(
      "objective", po::value<std::string>()->default_value("cost_per_million_output_tokens"),
      "cost_per_million_output_tokens | gpus | output_throughput_per_gpu")(
      "pessimistic",
      "check SLOs and rank by the unfavourable end of each prediction interval "
      "(validation/intervals.json)")(
      "space", po::value<std::string>(), "search space JSON (sim/sweep/README.md)")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a base-scenario field: dotted.path=value (repeatable)")(
      "out", po::value<std::string>(), "output directory")(
      "jobs,j", po::value<int>(), "configurations searched in parallel (default: all cores)")(
      "no-fast-forward", "simulate every decode iteration as an event (simulate --help)");
  AddWorkloadFlags(desc);
  po::variables_map vm;
  CAPPLAN_ASSIGN_OR_RETURN(const bool go,
                           ParseFlags("search", args, desc, "scenario", 1, &vm, ctx));
  if (!go) return Status::Ok();
  if (!vm.count("scenario")) {
    return Status::Usage(
        "search: missing SCENARIO.json; e.g. capplan search scenario.json "
        "--slo ttft_p90_ms<=2000 --space space.json --out search_out");
  }
  if (!vm.count("space")) return Status::Usage("search: --space SPACE.json is required");
  if (!vm.count("out")) return Status::Usage("search: --out DIR is required");
  sim::sweep::SearchOptions opt;
  for (const std::string& s : Strings(vm, "slo")) {
    CAPPLAN_ASSIGN_OR_RETURN(sim::sweep::Slo slo, sim::sweep::ParseSlo(s));
    opt.slos.push_back(std::move(slo));
  }
  CAPPLAN_ASSIGN_OR_RETURN(opt.objective,
                           sim::sweep::ParseObjective(vm["objective"].as<std::string>()));
  opt.pessimistic = vm.count("pessimistic") > 0;
  opt.jobs = vm.count("jobs") ? vm["jobs"].as<int>() : 0;
  if (vm.count("jobs") && opt.jobs < 1) return Status::Usage("--jobs: must be >= 1");
  opt.progress = ctx.stderr_is_tty ? ctx.err : nullptr;
  CAPPLAN_ASSIGN_OR_RETURN(sim::sweep::SearchSpace space,
                           sim::sweep::LoadSearchSpace(vm["space"].as<std::string>()));
  const std::string path = vm["scenario"].as<std::string>();
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json base,
                           sim::sweep::LoadBaseScenario(path, Sets(vm)));
  CAPPLAN_ASSIGN_OR_RETURN(
      sim::sweep::SearchResult r,
      sim::sweep::RunSearch(base, path, space, opt,
                            sim::sweep::RealSimHooks(path, !vm.count("no-fast-forward"))));
  const std::string out = vm["out"].as<std::string>();
  CAPPLAN_RETURN_IF_ERROR(sim::sweep::WriteSearchOutputs(r, out));
  sim::sweep::PrintSearchReport(r, *ctx.out);
  *ctx.out << "wrote " << out << "/search.json and " << out << "/pruned.csv\n";
  return Status::Ok();
}

}  // namespace

void RegisterSweepCommands(CommandTable* table) {
  table->Add({"sweep", "run a grid of simulations (resumable, shardable over Slurm/Kubernetes)",
              RunSweepCommand});
  table->Add({"search", "find the best configurations under latency SLOs (rate by bisection)",
              RunSearchCommand});
}

}  // namespace capplan::cli
