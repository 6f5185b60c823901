// `capplan simulate SCENARIO.json [--set dotted.path=value ...] [--out DIR]
//  [--json] [--trace-out FILE]`
#include "cli/commands.h"

#include <algorithm>
#include <iostream>

#include "cli/parse_flags.h"
#include "cli/workload_flags.h"
#include "common/atomic_file.h"
#include "common/json_util.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "sim/step_explain.h"
#include "sim/cost_model.h"

namespace capplan::cli {

namespace po = boost::program_options;

namespace {

// One line for a run with a prefill and a decode pool: both pools' load and
// the exposed transfer.
std::string PoolsLine(const schema::RunSummary& s) {
  const schema::PoolSummary* pre = s.pool(schema::PoolRole::kPrefill);
  const schema::PoolSummary* dec = s.pool(schema::PoolRole::kDecode);
  auto pct = [](const schema::PoolSummary* p, const std::optional<double> schema::PoolSummary::*f) {
    return p != nullptr ? 100 * (p->*f).value_or(0) : 0.0;
  };
  char buf[1024];
  std::snprintf(
      buf, sizeof(buf),
      "%s (PD, %d GPUs): %lld completed, %lld failed in %.2f s | output %.1f tok/s "
      "(%.1f /GPU) | TTFT median %.1f ms p99 %.1f ms (transfer mean %.2f ms) | TPOT "
      "median %.2f ms | prefill pool util %.0f%% KV peak %.0f%% | decode pool util "
      "%.0f%% KV peak %.0f%% | $%.3f per M output tokens\n",
      s.scenario.value_or("").c_str(), s.gpus.value_or(0),
      static_cast<long long>(s.completed.value_or(0)), static_cast<long long>(s.failed.value_or(0)),
      s.duration_s.value_or(0), s.output_throughput.value_or(0),
      s.output_throughput_per_gpu.value_or(0), s.ttft.median.value_or(0), s.ttft.p99.value_or(0),
      s.transfer ? s.transfer->exposed_transfer.mean.value_or(0) : 0.0, s.tpot.median.value_or(0),
      pct(pre, &schema::PoolSummary::utilization), pct(pre, &schema::PoolSummary::peak_kv_fraction),
      pct(dec, &schema::PoolSummary::utilization), pct(dec, &schema::PoolSummary::peak_kv_fraction),
      s.cost_usd_per_million_output_tokens.value_or(0));
  return buf;
}

void AddSimulateOptions(po::options_description& desc) {
  desc.add_options()("help,h", "show this help")(
      "scenario", po::value<std::string>(), "scenario JSON file")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a field: dotted.path=value (repeatable), e.g. --set workload.concurrency=8")(
      "out", po::value<std::string>(), "write DIR/summary.json and DIR/requests.csv")(
      "json", "print the summary JSON to stdout")(
      "row", "print one compact comparison row (for tables of runs)")(
      "trace-out", po::value<std::string>(), "write a Chrome/Perfetto trace JSON to FILE")(
      "explain-step",
      "print one decode and one prefill step op by op (kernel implementation, shape, bytes, "
      "FLOPs, time, bound, source of its efficiency) instead of simulating; the batch comes "
      "from the workload unless --explain-batch/--explain-context/--explain-prefill set it")(
      "explain-batch", po::value<int64_t>()->default_value(0), "decode requests in the explained step")(
      "explain-context", po::value<int64_t>()->default_value(0),
      "context tokens of each explained decode request")(
      "explain-prefill", po::value<int64_t>()->default_value(0),
      "new tokens of the explained prefill chunk")(
      "explain-prefix", po::value<int64_t>()->default_value(0),
      "tokens already cached before the explained prefill chunk")(
      "no-fast-forward",
      "simulate every decode iteration as an event (the same results, slower; the "
      "reference for the closed-form fast path)");
  AddWorkloadFlags(desc);
}

sim::ExplainOptions ExplainOptionsOf(const po::variables_map& vm) {
  sim::ExplainOptions eo;
  eo.decode_batch = vm["explain-batch"].as<int64_t>();
  eo.decode_context = vm["explain-context"].as<int64_t>();
  eo.prefill_tokens = vm["explain-prefill"].as<int64_t>();
  eo.prefill_cached = vm["explain-prefix"].as<int64_t>();
  return eo;
}

// Runs the scenario; with `out_dir`, into DIR/requests.csv and
// DIR/summary.json, complete or absent: a disk filling up after
// requests.csv must not leave a folder without its summary.json. The rows
// stream into their file as requests finish, so a day-long trace's rows
// never sit in memory.
Result<sim::RunResult> RunInto(const sim::Scenario& scenario, sim::RunOptions opt,
                               const std::string* out_dir) {
  sim::RunResult r;
  if (out_dir == nullptr) {
    CAPPLAN_ASSIGN_OR_RETURN(r, sim::RunScenario(scenario, opt));
    return r;
  }
  CAPPLAN_RETURN_IF_ERROR(WriteDirAtomicStreamed(
      *out_dir, {{"requests.csv",
                  [&](std::ostream& os) -> Status {
                    opt.requests_csv_out = &os;
                    CAPPLAN_ASSIGN_OR_RETURN(r, sim::RunScenario(scenario, opt));
                    return Status::Ok();
                  }},
                 {"summary.json", [&](std::ostream& os) -> Status {
                    os << DumpJson(schema::ToJson(r.summary)) << "\n";
                    return Status::Ok();
                  }}}));
  return r;
}

// " (80%: 120.5..151.2)": the metric's prediction band, "" when the summary
// has none.
std::string Band(const schema::RunSummary& s, const std::string& key, int precision) {
  const auto it = s.intervals.find(key);
  if (it == s.intervals.end()) return "";
  char buf[96];
  std::snprintf(buf, sizeof(buf), " (80%%: %.*f..%.*f)", precision, it->second.lo, precision,
                it->second.hi);
  return buf;
}

// One compact comparison row (--row): each headline figure with its 80%
// prediction band. A prefill-only pool makes one token per request, so its
// row counts input tokens (throughput, and cost and energy per token of
// input and output), each labelled by what it counts.
std::string RowLine(const schema::RunSummary& s, int64_t concurrency) {
  const schema::PoolSummary& p = s.pools.at(0);
  const bool prefill = p.deployment.is_object() &&
                       p.deployment.value("phase", std::string()).rfind("prefill", 0) == 0;
  const double tput = (prefill ? s.input_throughput : s.output_throughput).value_or(0);
  const double per_gpu = prefill ? tput / std::max(1, s.gpus.value_or(1))
                                 : s.output_throughput_per_gpu.value_or(0);
  char buf[768];
  std::snprintf(
      buf, sizeof(buf),
      "%-28s conc %4lld | %s %9.1f tok/s%s (%7.1f /GPU) | TTFT p50 %9.1f ms%s | TPOT p50 "
      "%7.2f ms%s | KV peak %5.1f%% | retract %4lld%s | $%.3f /M %s\n",
      s.scenario.value_or("").c_str(), static_cast<long long>(concurrency), prefill ? "in" : "out",
      tput, Band(s, prefill ? "input_throughput" : "output_throughput", 1).c_str(), per_gpu,
      s.ttft.median.value_or(0), Band(s, "median_ttft_ms", 1).c_str(), s.tpot.median.value_or(0),
      Band(s, "median_tpot_ms", 2).c_str(), 100.0 * p.peak_kv_fraction.value_or(0),
      static_cast<long long>(p.retractions.value_or(0)),
      p.kv_bound.value_or(false) ? " KV-bound" : "",
      (prefill ? s.cost_usd_per_million_total_tokens : s.cost_usd_per_million_output_tokens)
          .value_or(0),
      prefill ? "tok" : "out");
  std::string line = buf;
  if (s.joules_per_output_token) {
    line.pop_back();
    std::snprintf(buf, sizeof(buf), " | %.2f J/%s | %.0f %s tok/s per MW | %.1f kW/node peak\n",
                  (prefill ? s.joules_per_total_token : s.joules_per_output_token).value_or(0),
                  prefill ? "tok" : "out tok",
                  (prefill ? s.total_tokens_per_s_per_mw : s.output_tokens_per_s_per_mw).value_or(0),
                  prefill ? "total" : "out", s.peak_kw_per_node.value_or(0));
    line += buf;
  }
  return line;
}

// The one-pool result line.
std::string ResultLine(const schema::RunSummary& s) {
  const schema::PoolSummary& p = s.pools.at(0);
  char buf[1024];
  std::snprintf(buf, sizeof(buf),
                "%s: %lld completed, %lld failed in %.2f s | output %.1f tok/s (%.1f /GPU), "
                "total %.1f tok/s | TTFT median %.1f ms p99 %.1f ms | TPOT median %.2f ms | "
                "ITL p99 %.2f ms | KV peak %lld of %lld tokens, retractions %lld%s | $%.3f per M "
                "output tokens\n",
                s.scenario.value_or("").c_str(), static_cast<long long>(s.completed.value_or(0)),
                static_cast<long long>(s.failed.value_or(0)), s.duration_s.value_or(0),
                s.output_throughput.value_or(0), s.output_throughput_per_gpu.value_or(0),
                s.total_token_throughput.value_or(0), s.ttft.median.value_or(0),
                s.ttft.p99.value_or(0), s.tpot.median.value_or(0), s.itl.p99.value_or(0),
                static_cast<long long>(p.peak_kv_tokens.value_or(0)),
                static_cast<long long>(p.kv_capacity_tokens.value_or(0)),
                static_cast<long long>(p.retractions.value_or(0)),
                p.kv_bound.value_or(false) ? " (KV-bound)" : "",
                s.cost_usd_per_million_output_tokens.value_or(0));
  return buf;
}

// Where TTFT goes when KV tiers sit below the GPU: the means add up to the
// mean TTFT, the load wait being part of the prefill.
std::string TtftSplitLine(const schema::RunSummary& s) {
  if (!s.kv_load_time.mean) return "";
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "TTFT mean %.1f ms = queue %.1f ms + prefill %.1f ms (of which KV load wait "
                "%.1f ms); p99 queue %.1f ms, prefill %.1f ms\n",
                s.ttft.mean.value_or(0), s.queue_time.mean.value_or(0),
                s.prefill_time.mean.value_or(0), *s.kv_load_time.mean,
                s.queue_time.p99.value_or(0), s.prefill_time.p99.value_or(0));
  return buf;
}

// The energy line (sim/energy.h), when the profile has a power model.
std::string EnergyLine(const schema::RunSummary& s) {
  if (!s.joules_per_output_token) return "";
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "energy: %.3f J per output token (%.3f per total token, GPU boards %.3f) | "
                "%.2f kW avg, %.2f kW peak per node | %.0f output tok/s per provisioned MW "
                "(PUE %.2f)",
                *s.joules_per_output_token, s.joules_per_total_token.value_or(0),
                s.gpu_joules_per_output_token.value_or(0), s.avg_kw_per_node.value_or(0),
                s.peak_kw_per_node.value_or(0), s.output_tokens_per_s_per_mw.value_or(0),
                s.pue.value_or(0));
  std::string line = buf;
  if (s.electricity_usd_per_million_output_tokens) {
    std::snprintf(buf, sizeof(buf), " | electricity $%.4f per M output tokens",
                  *s.electricity_usd_per_million_output_tokens);
    line += buf;
  }
  return line + "\n";
}

// Ops priced outside the profile's fitted ranges are usually many (one per
// op and shape): one line names the first and counts the rest, which the
// summary lists; every other warning gets its own line.
void PrintWarnings(const std::vector<std::string>& ws, std::ostream& err) {
  std::vector<const std::string*> ranges;
  for (const auto& w : ws) {
    if (w.find(sim::kOutOfRangeText) != std::string::npos) {
      ranges.push_back(&w);
    } else {
      err << "warning: " << w << "\n";
    }
  }
  if (ranges.empty()) return;
  err << "warning: " << *ranges.front();
  if (ranges.size() > 1) {
    err << " (and " << ranges.size() - 1
        << " more op shapes outside the profile's fitted ranges, extrapolated: the "
           "summary's warnings list them)";
  }
  err << "\n";
}

Status RunSimulate(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description desc(
      "capplan simulate SCENARIO.json [options]\n"
      "Simulates a serving deployment on a workload (scenarios/README.md).\nOptions");
  AddSimulateOptions(desc);
  po::variables_map vm;
  CAPPLAN_ASSIGN_OR_RETURN(const bool go,
                           ParseFlags("simulate", args, desc, "scenario", 1, &vm, ctx));
  if (!go) return Status::Ok();
  if (!vm.count("scenario")) {
    return Status::Usage("simulate: missing SCENARIO.json; e.g. capplan simulate "
                         "scenarios/kimi-k2.6-kv-fp8.json");
  }
  std::vector<std::string> sets;
  if (vm.count("set")) sets = vm["set"].as<std::vector<std::string>>();
  for (std::string& s : WorkloadFlagSets(vm)) sets.push_back(std::move(s));
  CAPPLAN_ASSIGN_OR_RETURN(auto scenario,
                           sim::LoadScenarioFile(vm["scenario"].as<std::string>(), sets));
  if (vm.count("explain-step")) {
    CAPPLAN_ASSIGN_OR_RETURN(std::string text, sim::ExplainSteps(*scenario, ExplainOptionsOf(vm)));
    *ctx.out << text;
    return Status::Ok();
  }
  sim::RunOptions opt;
  opt.progress = ctx.stderr_is_tty ? ctx.err : nullptr;
  opt.want_trace = vm.count("trace-out") > 0;
  opt.fast_forward = vm.count("no-fast-forward") == 0;
  const std::string out_dir = vm.count("out") ? vm["out"].as<std::string>() : "";
  CAPPLAN_ASSIGN_OR_RETURN(sim::RunResult r,
                           RunInto(*scenario, opt, vm.count("out") ? &out_dir : nullptr));
  if (vm.count("trace-out")) {
    CAPPLAN_RETURN_IF_ERROR(WriteFileAtomic(vm["trace-out"].as<std::string>(), r.trace.dump()));
  }
  const schema::RunSummary& s = r.summary;
  if (vm.count("json")) {
    *ctx.out << DumpJson(schema::ToJson(s)) << "\n";
  } else if (s.disaggregated()) {
    *ctx.out << PoolsLine(s) << EnergyLine(s);
  } else if (vm.count("row")) {
    *ctx.out << RowLine(s, scenario->workload.concurrency);
  } else {
    *ctx.out << ResultLine(s) << TtftSplitLine(s) << EnergyLine(s);
    PrintWarnings(s.pools.at(0).warnings.value_or(std::vector<std::string>{}), *ctx.err);
  }
  return Status::Ok();
}

}  // namespace

void RegisterSimCommands(CommandTable* table) {
  table->Add({"simulate", "simulate a serving deployment on a workload (scenario JSON)",
              RunSimulate});
  RegisterSweepCommands(table);  // sweep, search (sim/sweep/)
  RegisterLaunchCommand(table);
}

}  // namespace capplan::cli
