// `capplan engine <subcommand>`: integrity-selftest, microbench, serve-bench,
// numerics. Each parses its own flags; bad input is a Usage error naming the
// flag and the fix.
#include "cli/commands.h"

#include <algorithm>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "common/atomic_file.h"
#include "common/did_you_mean.h"
#include "common/json_util.h"
#include "engine/integrity_selftest.h"
#include "engine/numerics.h"
#include "engine/serve_bench.h"
#include "kernels/harness/run_suites.h"
#include "models/card.h"
#include "models/types.h"

namespace po = boost::program_options;

namespace capplan::cli {
namespace {

Result<models::Dtype> KvDtype(const std::string& s) {
  auto d = models::ParseDtype(s);
  if (!d.ok() || (*d != models::Dtype::kBf16 && *d != models::Dtype::kFp8E4m3)) {
    return Status::Usage("--kv-cache: must be bf16 or fp8, got '" + s + "'");
  }
  return *d;
}

Status Help(const std::string& cmd, const po::options_description& desc, CommandContext& ctx) {
  *ctx.out << "usage: capplan " << cmd << " [options]\n" << desc;
  return Status::Ok();
}

Status IntegritySelftest(const std::vector<std::string>& args, CommandContext& ctx) {
  const std::string cmd = "engine integrity-selftest";
  int faults = 3, layers = 2, tp = 8;
  int64_t seed = 1;
  std::string model = "kimi-k2.6", kv = "fp8", dims = "small", backend = "cpu";
  po::options_description desc("options");
  desc.add_options()("help", "this help")("faults", po::value(&faults),
                                          "faults injected per kind (mis_map, swap, stale_reuse)")(
      "backend", po::value(&backend), "cpu (default) | cuda (needs a GPU; never falls back)")(
      "model", po::value(&model), "model card (name or path), default kimi-k2.6")(
      "layers", po::value(&layers), "layers of the slice (default 2)")(
      "tp", po::value(&tp), "tensor-parallel degree of the shard (default 8)")(
      "kv-cache", po::value(&kv), "bf16 | fp8 (default fp8)")("cpu-dims", po::value(&dims),
                                                              "small (default) | full")(
      "seed", po::value(&seed), "seed for weights, prompts and fault placement")(
      "json", "print the result as JSON");
  po::variables_map vm;
  CAPPLAN_RETURN_IF_ERROR(ParseCommandLine(cmd, args, desc, nullptr, &vm));
  if (vm.count("help")) return Help(cmd, desc, ctx);
  CAPPLAN_ASSIGN_OR_RETURN(models::ModelCard card, models::LoadModelCard(model));
  models::PrecisionChoice choice;
  CAPPLAN_ASSIGN_OR_RETURN(choice.kv_cache, KvDtype(kv));
  engine::SelftestOptions o;
  CAPPLAN_ASSIGN_OR_RETURN(o.slice, engine::MakeSliceConfig(card, tp, layers, dims, choice, seed));
  o.faults_per_kind = faults;
  o.backend = backend;
  o.seed = static_cast<uint64_t>(seed);
  CAPPLAN_ASSIGN_OR_RETURN(engine::SelftestReport rep, engine::RunIntegritySelftest(o));
  if (vm.count("json")) {
    *ctx.out << DumpJson(rep.ToJson()) << "\n";
  } else {
    *ctx.out << "integrity self-test on " << rep.slice << " (backend " << rep.backend << ", "
             << rep.requests << " requests)\n"
             << "  injected          " << rep.injected << "\n"
             << "  detected          " << rep.detected << "\n"
             << "  false_positives   " << rep.false_positives << "\n"
             << "  unaffected_ok     " << rep.unaffected_ok << " of " << rep.unaffected_total
             << " (bit-identical to the fault-free run)\n"
             << "  without verify    " << rep.corrupted_without_verify << " of "
             << rep.affected_without_verify << " affected requests silently changed output\n";
    for (size_t i = 0; i < rep.failures.size() && i < 3; ++i) {
      *ctx.out << "  e.g. " << rep.failures[i] << "\n";
    }
  }
  if (!rep.Passed()) return Status::Internal("integrity self-test FAILED");
  return Status::Ok();
}

Status Microbench(const std::vector<std::string>& args, CommandContext& ctx) {
  const std::string cmd = "engine microbench";
  std::vector<std::string> suites, filters;
  std::string out;
  double budget_s = 0;
  po::options_description desc("options");
  desc.add_options()("help", "this help")("suite", po::value(&suites)->composing(),
                                          "suite to run (repeatable; default all)")(
      "out", po::value(&out), "measurement file to write (capplan.measurements.v1)")(
      "shape-filter", po::value(&filters)->composing(),
      "keep shapes whose label contains this (repeatable)")("quick", "a few shapes per suite")(
      "dry-run", "CPU references only; times are CPU times, marked dry_run")(
      "budget-s", po::value(&budget_s), "stop starting shapes after this many seconds");
  po::variables_map vm;
  CAPPLAN_RETURN_IF_ERROR(ParseCommandLine(cmd, args, desc, nullptr, &vm));
  if (vm.count("help")) return Help(cmd, desc, ctx);
  if (out.empty()) return Status::Usage(cmd + ": --out FILE.json is required");
  kernels::SuiteOptions opt;
  opt.dry_run = vm.count("dry-run") != 0;
  opt.quick = vm.count("quick") != 0;
  opt.shape_filter = filters;
  if (budget_s > 0) {
    opt.deadline = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       std::chrono::duration<double>(budget_s));
  }
  auto run = kernels::RunSuites(suites, opt, engine::SourceCommit(), "");
  if (!run.ok() && run.status().code() == StatusCode::kUnavailable && !opt.dry_run) {
    *ctx.err << "capplan: warning: " << run.status().message()
             << "; running the CPU references instead (dry_run: true, NOT GPU times)\n";
    opt.dry_run = true;
    run = kernels::RunSuites(suites, opt, engine::SourceCommit(), "");
  }
  if (!run.ok()) return run.status();
  CAPPLAN_RETURN_IF_ERROR(kernels::WriteMeasurements(out, run->info, run->records));
  *ctx.out << "wrote " << run->records.size() << " records from " << run->suites_run.size()
           << " suite(s) to " << out << (run->info.dry_run ? " (dry run: CPU times)" : "") << "\n";
  if (!run->suites_cut.empty()) {
    *ctx.err << "capplan: warning: " << run->suites_cut.size()
             << " suite(s) not started: budget ran out\n";
  }
  return Status::Ok();
}

Status ServeBench(const std::vector<std::string>& args, CommandContext& ctx) {
  const std::string cmd = "engine serve-bench";
  std::string scenario, out, integrity, weights, kv;
  engine::ServeBenchOptions o;
  int num_requests = 0, concurrency = 0;
  int64_t input_len = 0, output_len = 0;
  po::options_description desc("options");
  desc.add_options()("help", "this help")("scenario", po::value(&scenario),
                                          "scenario JSON (scenarios/README.md)")(
      "layers", po::value(&o.layers), "layers of the model slice (default 2)")(
      "out", po::value(&out), "ENGINE_RUN file to write (calibrate/ENGINE_RUN.md)")(
      "backend", po::value(&o.backend),
      "cpu (default) | cuda: the GPU, timed with CUDA events; without a device "
      "it is an error, never a CPU fallback")(
      "cpu-dims", po::value(&o.dims),
      "small | full: slice widths (default small on cpu, full on cuda: the real per-GPU shapes)")(
      "num-requests", po::value(&num_requests), "override workload.num_requests")(
      "concurrency", po::value(&concurrency), "override workload.concurrency")(
      "input-len", po::value(&input_len), "override input lengths (fixed)")(
      "output-len", po::value(&output_len), "override output lengths (fixed)")(
      "kv-integrity", po::value(&integrity), "override deployment.kv_integrity (none|verify)")(
      "weights", po::value(&weights), "override deployment.weights (default|bf16|fp8|int4)")(
      "kv-cache", po::value(&kv), "override deployment.kv_cache (bf16|fp8)")(
      "kv-pages", po::value(&o.kv_pages), "KV pool pages (default: concurrency x longest)")(
      "json", "print the run summary as JSON");
  po::variables_map vm;
  CAPPLAN_RETURN_IF_ERROR(ParseCommandLine(cmd, args, desc, nullptr, &vm));
  if (vm.count("help")) return Help(cmd, desc, ctx);
  if (scenario.empty()) return Status::Usage(cmd + ": --scenario S.json is required");
  if (out.empty()) return Status::Usage(cmd + ": --out FILE.json is required");
  if (!vm.count("cpu-dims") && o.backend == "cuda") o.dims = "full";
  if (vm.count("num-requests")) o.num_requests = num_requests;
  if (vm.count("concurrency")) o.concurrency = concurrency;
  if (vm.count("input-len")) o.input_len = input_len;
  if (vm.count("output-len")) o.output_len = output_len;
  if (vm.count("kv-integrity")) {
    if (integrity != "none" && integrity != "verify") {
      return Status::Usage("--kv-integrity: must be none or verify, got '" + integrity + "'");
    }
    o.kv_integrity = integrity;
  }
  if (vm.count("weights")) {
    const std::vector<std::string>& known = models::WeightChoiceNames();
    if (std::find(known.begin(), known.end(), weights) == known.end()) {
      return Status::Usage("--weights: unknown weight format '" + EchoValue(weights) + "'" +
                           DidYouMean(weights, known));
    }
    o.weights = weights;
  }
  if (vm.count("kv-cache")) {
    CAPPLAN_ASSIGN_OR_RETURN(models::Dtype d, KvDtype(kv));
    o.kv_cache = d;
  }
  CAPPLAN_ASSIGN_OR_RETURN(engine::EngineScenario sc, engine::ReadEngineScenario(scenario));
  CAPPLAN_ASSIGN_OR_RETURN(engine::ServeBenchRun run, engine::RunServeBench(sc, o));
  CAPPLAN_RETURN_IF_ERROR(WriteFileAtomic(out, DumpJson(run.doc) + "\n"));
  nlohmann::json summary = {{"backend", run.doc["backend"]},
                            {"slice", run.doc["slice"]["dims"]},
                            {"iterations", run.doc["iterations"].size()},
                            {"completed", run.completed},
                            {"failed", run.failed},
                            {"output_tokens_per_s", run.output_tokens_per_s},
                            {"total_tokens_per_s", run.total_tokens_per_s},
                            {"verify_us", run.doc["verify_us"]},
                            {"total_measured_us", run.doc["total_measured_us"]},
                            {"out", out}};
  if (vm.count("json")) {
    *ctx.out << DumpJson(summary) << "\n";
  } else {
    std::ostringstream os;
    os << std::fixed << std::setprecision(1);
    os << "serve-bench " << sc.model << " (" << o.layers << " layers, " << o.dims
       << " dims, backend " << run.doc["backend"].get<std::string>()
       << "): " << run.doc["iterations"].size() << " iterations, " << run.completed
       << " completed, " << run.failed << " failed, " << run.output_tokens_per_s
       << " output tok/s, " << run.total_tokens_per_s << " total tok/s"
       << (o.backend == "cpu" ? " (CPU time of the slice, not GPU time)" : "") << "\nwrote " << out
       << "\n";
    *ctx.out << os.str();
  }
  return Status::Ok();
}

Status Numerics(const std::vector<std::string>& args, CommandContext& ctx) {
  const std::string cmd = "engine numerics";
  engine::NumericsOptions o;
  std::string model = "kimi-k2.6";
  int64_t seed = 1;
  po::options_description desc("options");
  desc.add_options()("help", "this help")("model", po::value(&model),
                                          "model card (default kimi-k2.6)")(
      "layers", po::value(&o.layers), "layers of the slice (default 2)")(
      "tp", po::value(&o.tp), "tensor-parallel degree (default 8)")(
      "cpu-dims", po::value(&o.dims), "small (default) | full")("streams", po::value(&o.streams),
                                                                "token streams (default 4)")(
      "prompt-tokens", po::value(&o.prompt_tokens), "prompt length per stream (default 32)")(
      "tokens", po::value(&o.generated_tokens), "generated tokens per stream (default 48)")(
      "seed", po::value(&seed), "weights/prompt seed")("json", "print JSON");
  po::variables_map vm;
  CAPPLAN_RETURN_IF_ERROR(ParseCommandLine(cmd, args, desc, nullptr, &vm));
  if (vm.count("help")) return Help(cmd, desc, ctx);
  o.seed = static_cast<uint64_t>(seed);
  CAPPLAN_ASSIGN_OR_RETURN(models::ModelCard card, models::LoadModelCard(model));
  CAPPLAN_ASSIGN_OR_RETURN(engine::NumericsReport rep, engine::RunNumerics(card, o));
  *ctx.out << (vm.count("json") ? DumpJson(rep.ToJson()) + "\n" : rep.ToText());
  return Status::Ok();
}

}  // namespace

void RegisterEngineCommands(CommandTable* table) {
  table->Add(Command{
      "engine", "reference engine: integrity-selftest, microbench, serve-bench, numerics",
      [](const std::vector<std::string>& args, CommandContext& ctx) -> Status {
        CommandTable sub;
        sub.Add(
            {"integrity-selftest", "inject KV mapping faults; check detection", IntegritySelftest});
        sub.Add({"microbench", "kernel shape sweep -> measurement file", Microbench});
        sub.Add(
            {"serve-bench", "continuous batching on a scenario -> ENGINE_RUN file", ServeBench});
        sub.Add({"numerics", "BF16 vs FP8 KV, FP8 vs INT4 weights on synthetic weights", Numerics});
        if (args.empty() || args[0] == "--help" || args[0] == "-h") {
          *ctx.out << sub.Help("capplan engine");
          return args.empty() ? Status::Usage("engine: missing subcommand") : Status::Ok();
        }
        return sub.Dispatch(args, ctx);
      }});
}

}  // namespace capplan::cli
