// `capplan import-run FILE [--format F] [--log SERVER_LOG] [--metrics SCRAPE]
//  (--scenario S | --model M --gpu G --engine E [--engine-version V] --tp N ...)
//  --out CASE.json`: a benchmark result of the user's own GPUs as a
// validation case that `capplan validate CASE.json` runs
// (calibrate/runs/README.md).
#include <cstdio>
#include <filesystem>
#include <ostream>

#include "calibrate/runs/case_builder.h"
#include "calibrate/runs/metrics_scrape.h"
#include "calibrate/runs/run_file.h"
#include "calibrate/runs/server_log.h"
#include "cli/commands.h"
#include "cli/parse_flags.h"
#include "common/atomic_file.h"
#include "common/json_util.h"

namespace capplan::cli {

namespace po = boost::program_options;

namespace {

namespace runs = calibrate::runs;

po::options_description ImportRunOptions() {
  po::options_description desc(
      "capplan import-run FILE --out CASE.json (--scenario S | --model M --gpu G --engine E "
      "--tp N) [options]\n"
      "Reads a benchmark result (vllm bench serve --save-result JSON, sglang bench_serving\n"
      "--output-file JSONL, GuideLLM benchmarks.json, InferenceX agg JSON), optionally the\n"
      "server log and a /metrics scrape of the same run, and writes a validation case that\n"
      "`capplan validate CASE.json` compares with the simulator (calibrate/runs/README.md).\n"
      "Options");
  desc.add_options()("help,h", "show this help")("file", po::value<std::string>(),
                                                 "benchmark result file")(
      "out", po::value<std::string>(), "validation case to write (atomically)")(
      "format", po::value<std::string>()->default_value("auto"),
      "vllm, sglang, guidellm, inferencex or auto (told by the file's keys)")(
      "log", po::value<std::string>(),
      "the engine's server log of the run (start-up KV line, step lines)")(
      "metrics", po::value<std::string>(), "a Prometheus /metrics scrape of the engine")(
      "scenario", po::value<std::string>(),
      "scenario whose model, hardware and deployment ran the benchmark (its workload is "
      "replaced)")("model", po::value<std::string>(), "model card (name or path)")(
      "gpu", po::value<std::string>(), "hardware profile (name or path)")(
      "engine", po::value<std::string>(), "vllm or sglang")(
      "engine-version", po::value<std::string>(), "engine version (selects its profile entry)")(
      "tp", po::value<int64_t>(), "tensor-parallel size")(
      "ep", po::value<int64_t>(), "expert-parallel size")("gpus", po::value<int64_t>(),
                                                          "GPUs of the instance (default: tp)")(
      "dp-attention", "SGLang's --enable-dp-attention was on")("kv-cache", po::value<std::string>(),
                                                               "KV cache dtype (bf16, fp8)")(
      "weights", po::value<std::string>(), "weight format (default, fp8, int4, ...)")(
      "mem-fraction", po::value<double>(),
      "the engine's --mem-fraction-static / --gpu-memory-utilization (default: the server "
      "log's, else the engine profile's)")("name", po::value<std::string>(),
                                           "case name (default: the --out file's stem)");
  return desc;
}

runs::DeploymentFlags ReadDeploymentFlags(const po::variables_map& vm) {
  runs::DeploymentFlags f;
  auto str = [&](const char* k, std::string* out) {
    if (vm.count(k)) *out = vm[k].as<std::string>();
  };
  str("model", &f.model);
  str("gpu", &f.hardware);
  str("engine", &f.engine);
  str("engine-version", &f.engine_version);
  str("kv-cache", &f.kv_cache);
  str("weights", &f.weights);
  if (vm.count("tp")) f.tp = vm["tp"].as<int64_t>();
  if (vm.count("ep")) f.ep = vm["ep"].as<int64_t>();
  if (vm.count("gpus")) f.gpus = vm["gpus"].as<int64_t>();
  if (vm.count("dp-attention")) f.dp_attention = true;
  if (vm.count("mem-fraction")) f.mem_fraction_static = vm["mem-fraction"].as<double>();
  return f;
}

// The scenario the runs ran on: the file's, or one made from the flags.
Result<nlohmann::json> BaseScenario(const po::variables_map& vm,
                                    const std::vector<runs::ImportedRun>& imported) {
  if (!vm.count("scenario")) return runs::ScenarioFromFlags(ReadDeploymentFlags(vm), imported[0]);
  for (const char* k : {"model", "gpu", "engine", "engine-version", "tp", "ep", "gpus",
                        "dp-attention", "kv-cache", "weights", "mem-fraction"}) {
    if (vm.count(k)) {
      return Status::Usage(std::string("import-run: --") + k +
                           " goes without --scenario; set it in the scenario instead");
    }
  }
  const std::string path = vm["scenario"].as<std::string>();
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  if (!doc.is_object()) return Status::Usage(path + ": a scenario must be a JSON object");
  return doc;
}

void PrintRun(const runs::ImportedRun& r, const nlohmann::json& workload, std::ostream& out) {
  out << "  row '" << r.label << "': " << r.measured.size() << " metrics, workload "
      << workload.dump() << "\n   ";
  for (const auto& [k, v] : r.measured) {
    char b[96];
    std::snprintf(b, sizeof(b), " %s=%.4g", k.c_str(), v);
    out << b;
  }
  out << "\n";
  for (const std::string& n : r.notes) out << "    note: " << n << "\n";
}

Status ReadExtras(const po::variables_map& vm, runs::CaseInputs* in, std::ostream& out) {
  if (vm.count("log")) {
    in->log_file = vm["log"].as<std::string>();
    CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadFile(in->log_file));
    CAPPLAN_ASSIGN_OR_RETURN(runs::ServerLog log, runs::ParseServerLog(text, in->log_file));
    out << "  server log " << in->log_file << ": " << log.engine;
    if (!log.engine_version.empty()) out << " " << log.engine_version;
    out << ", " << log.lines_read << " lines read";
    if (log.kv_tokens) out << ", engine KV pool " << *log.kv_tokens << " tokens";
    if (log.gpu_blocks) out << ", " << *log.gpu_blocks << " GPU blocks";
    out << "\n";
    in->log = std::move(log);
  }
  if (vm.count("metrics")) {
    in->scrape_file = vm["metrics"].as<std::string>();
    CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadFile(in->scrape_file));
    CAPPLAN_ASSIGN_OR_RETURN(runs::MetricsScrape s,
                             runs::ParseMetricsScrape(text, in->scrape_file));
    out << "  metrics scrape " << in->scrape_file << ": " << s.engine << ", " << s.series_read
        << " series read\n";
    in->scrape = std::move(s);
  }
  return Status::Ok();
}

Status RunImportRun(const std::vector<std::string>& args, CommandContext& ctx) {
  const po::options_description desc = ImportRunOptions();
  po::variables_map vm;
  CAPPLAN_ASSIGN_OR_RETURN(const bool go,
                           ParseFlags("import-run", args, desc, "file", 1, &vm, ctx));
  if (!go) return Status::Ok();
  if (!vm.count("file")) {
    return Status::Usage(
        "import-run: missing FILE; e.g. capplan import-run result.json "
        "--scenario my.json --out case.json");
  }
  if (!vm.count("out")) return Status::Usage("import-run: missing --out CASE.json");
  runs::CaseInputs in;
  in.run_file = vm["file"].as<std::string>();
  const std::string out = vm["out"].as<std::string>();
  in.name =
      vm.count("name") ? vm["name"].as<std::string>() : std::filesystem::path(out).stem().string();
  CAPPLAN_ASSIGN_OR_RETURN(in.runs, runs::ReadRunFile(in.run_file, vm["format"].as<std::string>()));
  CAPPLAN_ASSIGN_OR_RETURN(in.scenario, BaseScenario(vm, in.runs));
  *ctx.out << "import-run: " << in.run_file << ": " << in.runs.front().tool << ", "
           << in.runs.size() << " run(s)\n";
  for (const runs::ImportedRun& r : in.runs) PrintRun(r, runs::WorkloadJson(r.workload), *ctx.out);
  CAPPLAN_RETURN_IF_ERROR(ReadExtras(vm, &in, *ctx.out));
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json c, runs::BuildCase(in));
  CAPPLAN_RETURN_IF_ERROR(WriteFileAtomic(out, DumpJson(c) + "\n"));
  const nlohmann::json& last = c["rows"].back();
  if (last["measured"].contains("kv_capacity_tokens")) {
    *ctx.out << "  capacity row: " << last["note"].get<std::string>() << "\n";
  }
  *ctx.out << "import-run: wrote " << out << " (" << c["rows"].size()
           << " rows); compare with: capplan validate " << out << "\n";
  return Status::Ok();
}

}  // namespace

void RegisterImportRunCommand(CommandTable* table) {
  table->Add({"import-run",
              "a benchmark result of your own GPUs (vLLM, SGLang, GuideLLM, InferenceX) as a "
              "validation case",
              RunImportRun});
}

}  // namespace capplan::cli
