// Simulator speed budget: 100k requests of study (a) -- Kimi
// K2.6 decode pool on 8xH200 TP8, FP8 KV, closed loop 64 -- with 8K in / 1K
// out must simulate in under 1 s on one core. Reports simulated requests/s
// and scheduler iterations/s. BM_Agent*: the multi-turn agent scenario
// (prefix caching off and on, the same sessions), the cost of the cache.
//   build-DIR/bench/sim_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include "common/data_path.h"
#include "sim/scenario.h"
#include "sim/simulate.h"

namespace capplan {
namespace {

void RunFile(benchmark::State& state, const char* scenario, const std::vector<std::string>& sets) {
  auto sc = LoadScenarioFile(DataPath(scenario), sets);
  if (!sc.ok()) {
    state.SkipWithError(sc.status().message().c_str());
    return;
  }
  int64_t iterations = 0, requests = 0;
  for (auto _ : state) {
    auto r = RunScenario(**sc, RunOptions{});
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    iterations += r->summary.pools.at(0).iterations.value_or(0);
    requests += static_cast<int64_t>((*sc)->workload.requests.size());
    benchmark::DoNotOptimize(r->summary);
  }
  state.counters["sim_requests_per_s"] =
      benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kIsRate);
  state.counters["sim_iterations_per_s"] =
      benchmark::Counter(static_cast<double>(iterations), benchmark::Counter::kIsRate);
}

void RunStudyA(benchmark::State& state, const std::vector<std::string>& sets) {
  RunFile(state, "scenarios/kimi-k2.6-kv-fp8.json", sets);
}

void BM_StudyA_100k(benchmark::State& state) {
  RunStudyA(state, {"workload.num_requests=100000", "workload.warmup_requests=0",
                    "workload.input_tokens.value=8192", "workload.output_tokens.value=1024"});
}
BENCHMARK(BM_StudyA_100k)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_StudyA_1k(benchmark::State& state) {
  RunStudyA(state, {"workload.num_requests=1000", "workload.warmup_requests=0",
                    "workload.input_tokens.value=8192", "workload.output_tokens.value=1024"});
}
BENCHMARK(BM_StudyA_1k)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_AgentNoCache(benchmark::State& state) {
  RunFile(state, "scenarios/kimi-k2.6-agent-nocache.json", {});
}
BENCHMARK(BM_AgentNoCache)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_AgentCache(benchmark::State& state) {
  RunFile(state, "scenarios/kimi-k2.6-agent-cache.json", {});
}
BENCHMARK(BM_AgentCache)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace
}  // namespace capplan

BENCHMARK_MAIN();
