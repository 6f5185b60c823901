// Workload generation and trace parsing throughput. The simulator budget
// is a 100k-request simulation in < 1 s, so generating its
// requests must take a few ms.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "bench/azure_row.h"
#include "sim/workload/random.h"
#include "sim/workload/trace_reader.h"
#include "sim/workload/workload.h"

namespace capplan {
namespace {

void BM_OpenLoopLognormal(benchmark::State& state) {
  const nlohmann::json doc = {
      {"kind", "open_loop"},
      {"num_requests", state.range(0)},
      {"request_rate", 100.0},
      {"burstiness", 0.5},
      {"input_tokens", {{"dist", "lognormal"}, {"median", 1024}, {"p90", 4096}, {"max", 32768}}},
      {"output_tokens", {{"dist", "lognormal"}, {"mu", 5.5}, {"sigma", 0.8}}},
      {"seed", 1}};
  for (auto _ : state) {
    JsonObject o(doc, "bench", "/workload");
    auto w = sim::LoadWorkload(o, "");
    if (!w.ok()) state.SkipWithError(w.status().message().c_str());
    benchmark::DoNotOptimize(w);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_OpenLoopLognormal)->Arg(100'000)->Unit(benchmark::kMillisecond);

// Writes an n-row trace in `format` to a temp file (synthetic rows).
std::string WriteTrace(const std::string& format, int64_t n) {
  // The pid keeps concurrent runs from sharing a file.
  const std::string path =
      "/tmp/capplan_workload_bench_" + std::to_string(getpid()) + "_" + format + ".txt";
  std::ofstream out(path);
  sim::WorkloadRng rng(42, 0);
  int64_t t_100ns = 0;
  if (format == "azure_2023") out << "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  for (int64_t i = 0; i < n; ++i) {
    t_100ns += rng.UniformInt(1, 5'000'000);
    const int64_t in = rng.UniformInt(1, 8000), gen = rng.UniformInt(1, 800);
    if (format == "azure_2023") {
      WriteAzureRow(out, t_100ns, in, gen);
    } else {
      out << "{\"timestamp\": " << t_100ns / 10'000 << ", \"input_length\": " << in
          << ", \"output_length\": " << gen << ", \"hash_ids\": [";
      for (int64_t b = 0; b < (in + 511) / 512; ++b) out << (b ? ", " : "") << i * 16 + b;
      out << "]}\n";
    }
  }
  return path;
}

void BM_ParseTrace(benchmark::State& state, const std::string& format) {
  const std::string path = WriteTrace(format, state.range(0));
  for (auto _ : state) {
    auto d = sim::ReadTraceFile(format, path, {});
    if (!d.ok()) state.SkipWithError(d.status().message().c_str());
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  std::remove(path.c_str());
}
BENCHMARK_CAPTURE(BM_ParseTrace, azure_2023, std::string("azure_2023"))
    ->Arg(10'000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ParseTrace, mooncake, std::string("mooncake"))
    ->Arg(10'000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace capplan

BENCHMARK_MAIN();
