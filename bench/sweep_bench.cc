// Sweep throughput: a grid of full simulations on the sweep thread pool, the
// way `capplan sweep` runs them (validation, simulation, atomic per-point
// files, merge). Target: 1,000 points of 10k-request simulations
// in under 60 s on 2 cores. Reports points/s.
// BM_SloSearch/{0,1}: `capplan search` over 16 configurations of
// scenarios/llama-3.1-70b-tp4.json with 2,000 requests per probe, without
// and with fast-forward (RunOptions::fast_forward). Target: <= 2 s on 2 cores.
//   build-DIR/bench/sweep_bench --benchmark_filter=BM_Sweep/1000/10000
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "common/json_util.h"
#include "sim/sweep/grid.h"
#include "sim/sweep/search.h"
#include "sim/sweep/sim_hooks.h"
#include "sim/sweep/sim_hooks.h"
#include "sim/sweep/sweep_runner.h"

namespace capplan {
namespace {

// The sweep CLI tests' scenario (Llama-3.1-70B TP4, open loop, 512 in / 64
// out tokens), scaled to `requests` requests; the grid varies the rate and
// the seed so every point is a distinct simulation.
void BM_Sweep(benchmark::State& state) {
  const int points = static_cast<int>(state.range(0));
  const int requests = static_cast<int>(state.range(1));
  const std::string scenario =
      std::string(CAPPLAN_SOURCE_DIR) + "/tests/sim/sweep/data/small_open_loop.json";
  auto doc = ReadJsonFile(scenario);
  if (!doc.ok()) {
    state.SkipWithError(doc.status().message().c_str());
    return;
  }
  (*doc)["workload"]["num_requests"] = requests;
  (*doc)["workload"]["warmup_requests"] = requests / 10;
  const int rates = points >= 10 ? 10 : points;
  std::string rate_flag = "workload.request_rate=";
  for (int i = 0; i < rates; ++i) rate_flag += (i ? "," : "") + std::to_string(2 + 2 * i);
  std::string seed_flag = "workload.seed=";
  for (int i = 0; i < points / rates; ++i) seed_flag += (i ? "," : "") + std::to_string(i + 1);
  std::vector<sim::sweep::GridAxis> axes = {sim::sweep::ParseGridFlag(rate_flag).value(),
                                            sim::sweep::ParseGridFlag(seed_flag).value()};
  const sim::sweep::SimHooks hooks = sim::sweep::RealSimHooks(scenario);
  int64_t done = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const std::string dir = (std::filesystem::temp_directory_path() /
                             ("capplan_sweep_bench_" + std::to_string(::getpid())))
                                .string();
    std::filesystem::remove_all(dir);
    state.ResumeTiming();
    auto plan = sim::sweep::BuildSweepPlan(*doc, scenario, axes, hooks.validate);
    if (!plan.ok()) {
      state.SkipWithError(plan.status().message().c_str());
      return;
    }
    sim::sweep::SweepOptions opt;
    opt.out_dir = dir;
    opt.jobs = static_cast<int>(std::thread::hardware_concurrency());
    auto stats = sim::sweep::RunSweep(*plan, hooks, opt);
    if (!stats.ok()) {
      state.SkipWithError(stats.status().message().c_str());
      return;
    }
    done += stats->ran;
    state.PauseTiming();
    std::filesystem::remove_all(dir);
    state.ResumeTiming();
  }
  state.counters["points_per_s"] = benchmark::Counter(static_cast<double>(done),
                                                      benchmark::Counter::kIsRate);
  state.counters["points"] = points;
  state.counters["requests_per_point"] = requests;
  state.counters["threads"] = std::thread::hardware_concurrency();
}
BENCHMARK(BM_Sweep)
    ->Args({1000, 10000})
    ->Args({20, 10000})
    ->Args({10, 200})
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

void BM_SloSearch(benchmark::State& state) {
  const std::string scenario = std::string(CAPPLAN_SOURCE_DIR) + "/scenarios/llama-3.1-70b-tp4.json";
  auto base = sim::sweep::LoadBaseScenario(
      scenario, {"workload.num_requests=2000", "workload.warmup_requests=200"});
  auto space = sim::sweep::ParseSearchSpace(nlohmann::json::parse(R"({
      "axes": {"deployment.replicas": [1, 2, 3, 4], "deployment.kv_cache": ["bf16", "fp8"],
               "deployment.chunked_prefill_tokens": [4096, 16384]},
      "request_rate": {"path": "workload.request_rate", "min_req_per_s": 0.5,
                       "max_req_per_s": 64, "rel_tol": 0.05}})"),
                                            "sweep_bench");
  if (!base.ok() || !space.ok()) {
    state.SkipWithError(!base.ok() ? base.status().message().c_str()
                                   : space.status().message().c_str());
    return;
  }
  sim::sweep::SearchOptions opt;
  opt.slos = {sim::sweep::ParseSlo("p90_ttft_ms<=2000").value(),
              sim::sweep::ParseSlo("p90_tpot_ms<=50").value()};
  opt.jobs = static_cast<int>(std::thread::hardware_concurrency());
  const sim::sweep::SimHooks hooks = sim::sweep::RealSimHooks(scenario, state.range(0) != 0);
  int64_t sims = 0;
  for (auto _ : state) {
    auto r = sim::sweep::RunSearch(*base, scenario, *space, opt, hooks);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    sims += r->simulations;
    state.counters["configs"] = static_cast<double>(r->configs);
    state.counters["feasible"] = static_cast<double>(r->ranked.size());
  }
  state.counters["simulations"] = static_cast<double>(sims);
  state.counters["threads"] = std::thread::hardware_concurrency();
}
BENCHMARK(BM_SloSearch)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace
}  // namespace capplan

BENCHMARK_MAIN();
