// `capplan simulate SCENARIO.json [--set dotted.path=value ...] [--out DIR]
//  [--json] [--trace-out FILE]`
#include "sim/commands.h"

#include <iostream>

#include "common/atomic_file.h"
#include "common/json_util.h"
#include "sim/pd/pd_command.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "sim/sweep/commands.h"

namespace capplan {

namespace po = boost::program_options;

namespace {

Status RunSimulate(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description desc(
      "capplan simulate SCENARIO.json [options]\n"
      "Simulates a serving deployment on a workload (scenarios/README.md).\nOptions");
  desc.add_options()("help,h", "show this help")(
      "scenario", po::value<std::string>(), "scenario JSON file")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a field: dotted.path=value (repeatable), e.g. --set workload.concurrency=8")(
      "out", po::value<std::string>(), "write DIR/summary.json and DIR/requests.csv")(
      "json", "print the summary JSON to stdout")(
      "row", "print one compact comparison row (for tables of runs)")(
      "trace-out", po::value<std::string>(), "write a Chrome/Perfetto trace JSON to FILE");
  po::positional_options_description pos;
  pos.add("scenario", 1);
  po::variables_map vm;
  CAPPLAN_RETURN_IF_ERROR(ParseCommandLine("simulate", args, desc, &pos, &vm));
  if (vm.count("help")) {
    *ctx.out << desc << "\n";
    return Status::Ok();
  }
  if (!vm.count("scenario")) {
    return Status::Usage("simulate: missing SCENARIO.json; e.g. capplan simulate "
                         "scenarios/kimi-k2.6-kv-fp8.json");
  }
  std::vector<std::string> sets;
  if (vm.count("set")) sets = vm["set"].as<std::vector<std::string>>();
  // PD scenarios (`pd` instead of `deployment`) run through sim/pd.
  if (IsPdScenarioFile(vm["scenario"].as<std::string>())) {
    PdCommandOptions pdo;
    if (vm.count("out")) pdo.out_dir = vm["out"].as<std::string>();
    if (vm.count("trace-out")) pdo.trace_out = vm["trace-out"].as<std::string>();
    pdo.json = vm.count("json") > 0;
    return RunPdSimulateCommand(vm["scenario"].as<std::string>(), sets, pdo, ctx);
  }
  CAPPLAN_ASSIGN_OR_RETURN(auto scenario,
                           LoadScenarioFile(vm["scenario"].as<std::string>(), sets));
  RunOptions opt;
  opt.progress = ctx.stderr_is_tty ? ctx.err : nullptr;
  opt.want_requests_csv = vm.count("out") > 0;
  opt.want_trace = vm.count("trace-out") > 0;
  CAPPLAN_ASSIGN_OR_RETURN(RunResult r, RunScenario(*scenario, opt));
  if (vm.count("out")) {
    // Complete or absent: a disk filling up after summary.json must not
    // leave a folder without its requests.csv.
    CAPPLAN_RETURN_IF_ERROR(WriteDirAtomic(vm["out"].as<std::string>(),
                                           {{"summary.json", DumpJson(r.summary) + "\n"},
                                            {"requests.csv", r.requests_csv}}));
  }
  if (vm.count("trace-out")) {
    CAPPLAN_RETURN_IF_ERROR(WriteFileAtomic(vm["trace-out"].as<std::string>(), r.trace.dump()));
  }
  const nlohmann::json& s = r.summary;
  if (vm.count("json")) {
    *ctx.out << DumpJson(s) << "\n";
  } else if (vm.count("row")) {
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  "%-28s conc %4lld | out %9.1f tok/s (%7.1f /GPU) | TTFT p50 %9.1f ms | TPOT p50 "
                  "%7.2f ms | KV peak %5.1f%% | retract %4lld%s | $%.3f /M out\n",
                  s["scenario"].get<std::string>().c_str(),
                  static_cast<long long>(s["workload"]["concurrency"].get<int64_t>()),
                  s["output_throughput"].get<double>(), s["output_throughput_per_gpu"].get<double>(),
                  s["median_ttft_ms"].get<double>(), s["median_tpot_ms"].get<double>(),
                  100.0 * s["peak_kv_fraction"].get<double>(),
                  static_cast<long long>(s["retractions"].get<int64_t>()),
                  s["kv_bound"].get<bool>() ? " KV-bound" : "",
                  s["cost_usd_per_million_output_tokens"].get<double>());
    *ctx.out << buf;
  } else {
    char buf[1024];
    std::snprintf(buf, sizeof(buf),
                  "%s: %lld completed, %lld failed in %.2f s | output %.1f tok/s (%.1f /GPU), "
                  "total %.1f tok/s | TTFT median %.1f ms p99 %.1f ms | TPOT median %.2f ms | "
                  "ITL p99 %.2f ms | KV peak %lld of %lld tokens, retractions %lld%s | $%.3f per M "
                  "output tokens\n",
                  s["scenario"].get<std::string>().c_str(),
                  static_cast<long long>(s["completed"].get<int64_t>()),
                  static_cast<long long>(s["failed"].get<int64_t>()), s["duration_s"].get<double>(),
                  s["output_throughput"].get<double>(), s["output_throughput_per_gpu"].get<double>(),
                  s["total_token_throughput"].get<double>(), s["median_ttft_ms"].get<double>(),
                  s["p99_ttft_ms"].get<double>(), s["median_tpot_ms"].get<double>(),
                  s["p99_itl_ms"].get<double>(),
                  static_cast<long long>(s["peak_kv_tokens"].get<int64_t>()),
                  static_cast<long long>(s["kv_capacity_tokens"].get<int64_t>()),
                  static_cast<long long>(s["retractions"].get<int64_t>()),
                  s["kv_bound"].get<bool>() ? " (KV-bound)" : "",
                  s["cost_usd_per_million_output_tokens"].get<double>());
    *ctx.out << buf;
    for (const auto& w : s["warnings"]) *ctx.err << "warning: " << w.get<std::string>() << "\n";
  }
  return Status::Ok();
}

}  // namespace

void RegisterSimCommands(CommandTable* table) {
  table->Add({"simulate", "simulate a serving deployment on a workload (scenario JSON)",
              RunSimulate});
  RegisterSweepCommands(table);  // sweep, search (sim/sweep/)
}

}  // namespace capplan
