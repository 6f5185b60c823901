// Simulator speed, one thread. Reports simulated requests/s and scheduler
// iterations/s. The /0 and /1 variants run the same simulation without and
// with fast-forward of steady decode (RunOptions::fast_forward), side by
// side in one run.
//  * BM_StudyA_100k: study (a) -- Kimi K2.6 decode pool on 8xH200 TP8, FP8
//    KV, closed loop 64 -- 100k requests of 8K in / 1K out.
//  * BM_KimiClosedLoop_1M: the same with 1,000,000 requests. Target <= 1 s.
//  * BM_LlamaTrace_100k: Llama-3.1-8B on 1xH200 with vLLM replaying a
//    100,000-row Azure-format trace (Poisson 6 req/s, 1024 in / 256 out).
//    Target <= 0.1 s.
//  * BM_Agent*: the multi-turn agent scenario (prefix caching off and on,
//    the same sessions), the cost of the cache.
//  * BM_VidurTrace_100k/F/O: Vidur's own workload (Llama-3.1-8B on 1xH200,
//    vLLM, chunked prefill 512 tokens, at most 128 running, a 100,000-row
//    Azure-format trace of 1024 in / 256 out at 6 req/s Poisson): every
//    request's prompt is priced in mixed chunked-prefill steps. O=1 writes
//    DIR/requests.csv and DIR/summary.json as `simulate --out` does.
//    Target <= 0.27 s with O=1.
//  * BM_KimiPrefill_1M/F/O: study (a)'s deployment serving both phases
//    (SGLang TP8, FP8 KV), closed loop 64 (the default client), 1,000,000
//    requests of 8K in / 1K out: each new request's prompt shares a step
//    with 63 decodes. Target <= 1 s. F=0 (step by step) runs 10,000.
//  * BM_AgentHostTier/T: agentic sessions past HBM without (T=0) and with
//    (T=1) a host KV tier.
//  * BM_RequestsCsv/N: writing N finished requests' requests.csv rows
//    through RequestLog, as `simulate --out` does (its writer thread
//    formats and writes them), into a stream that discards them so the
//    disk's speed does not enter.
//   build-DIR/bench/sim_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <streambuf>

#include "bench/azure_row.h"
#include "common/atomic_file.h"
#include "common/data_path.h"
#include "common/json_util.h"
#include "sim/request_log.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "sim/workload/random.h"

namespace capplan {
namespace {

void RunScenarioBench(benchmark::State& state, const sim::Scenario& sc) {
  sim::RunOptions opt;
  opt.fast_forward = state.range(0) != 0;
  int64_t iterations = 0, requests = 0;
  for (auto _ : state) {
    auto r = sim::RunScenario(sc, opt);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    iterations += r->summary.pools.at(0).iterations.value_or(0);
    requests += static_cast<int64_t>(sc.workload.requests.size());
    benchmark::DoNotOptimize(r->summary);
  }
  state.counters["sim_requests_per_s"] =
      benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kIsRate);
  state.counters["sim_iterations_per_s"] =
      benchmark::Counter(static_cast<double>(iterations), benchmark::Counter::kIsRate);
}

// One run as `capplan simulate --out DIR` makes it: requests.csv streamed
// into its file as requests finish, then summary.json, both atomically.
Status RunWithOut(const sim::Scenario& sc, sim::RunOptions opt, const std::string& dir,
                  sim::RunResult* r) {
  return WriteDirAtomicStreamed(
      dir, {{"requests.csv",
             [&](std::ostream& os) -> Status {
               opt.requests_csv_out = &os;
               CAPPLAN_ASSIGN_OR_RETURN(*r, sim::RunScenario(sc, opt));
               return Status::Ok();
             }},
            {"summary.json", [&](std::ostream& os) -> Status {
               os << DumpJson(schema::ToJson(r->summary)) << "\n";
               return Status::Ok();
             }}});
}

// range(0): fast-forward off/on; range(1): without/with --out.
void RunScenarioOutBench(benchmark::State& state, const sim::Scenario& sc) {
  sim::RunOptions opt;
  opt.fast_forward = state.range(0) != 0;
  const std::string dir = "/tmp/capplan_sim_bench_out_" + std::to_string(getpid());
  int64_t iterations = 0, requests = 0;
  for (auto _ : state) {
    sim::RunResult r;
    if (state.range(1) != 0) {
      if (Status s = RunWithOut(sc, opt, dir, &r); !s.ok()) {
        state.SkipWithError(s.message().c_str());
        return;
      }
    } else {
      auto run = sim::RunScenario(sc, opt);
      if (!run.ok()) {
        state.SkipWithError(run.status().message().c_str());
        return;
      }
      r = *std::move(run);
    }
    iterations += r.summary.pools.at(0).iterations.value_or(0);
    requests += static_cast<int64_t>(sc.workload.requests.size());
    benchmark::DoNotOptimize(r.summary);
  }
  std::filesystem::remove_all(dir);
  state.counters["sim_requests_per_s"] =
      benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kIsRate);
  state.counters["sim_iterations_per_s"] =
      benchmark::Counter(static_cast<double>(iterations), benchmark::Counter::kIsRate);
}

// Runs `bench` (RunScenarioBench or RunScenarioOutBench) on a parsed or
// loaded scenario, or marks the benchmark skipped with the error.
template <typename Parsed>
void RunOrSkip(benchmark::State& state, const Parsed& sc,
               void (*bench)(benchmark::State&, const sim::Scenario&)) {
  if (!sc.ok()) {
    state.SkipWithError(sc.status().message().c_str());
    return;
  }
  bench(state, **sc);
}

void RunFile(benchmark::State& state, const char* scenario, const std::vector<std::string>& sets) {
  auto sc = sim::LoadScenarioFile(DataPath(scenario), sets);
  RunOrSkip(state, sc, RunScenarioBench);
}

void RunStudyA(benchmark::State& state, const std::vector<std::string>& sets) {
  RunFile(state, "scenarios/kimi-k2.6-kv-fp8.json", sets);
}

void BM_StudyA_100k(benchmark::State& state) {
  RunStudyA(state, {"workload.num_requests=100000", "workload.warmup_requests=0",
                    "workload.input_tokens.value=8192", "workload.output_tokens.value=1024"});
}
BENCHMARK(BM_StudyA_100k)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_StudyA_1k(benchmark::State& state) {
  RunStudyA(state, {"workload.num_requests=1000", "workload.warmup_requests=0",
                    "workload.input_tokens.value=8192", "workload.output_tokens.value=1024"});
}
BENCHMARK(BM_StudyA_1k)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_KimiClosedLoop_1M(benchmark::State& state) {
  RunStudyA(state, {"workload.num_requests=1000000", "workload.warmup_requests=0",
                    "workload.input_tokens.value=8192", "workload.output_tokens.value=1024"});
}
BENCHMARK(BM_KimiClosedLoop_1M)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()
    ->Iterations(1);

// An n-row Azure 2023 (Azure LLM inference trace) file: Poisson arrivals at
// `rate` req/s, fixed lengths. The pid keeps concurrent runs apart.
std::string WriteAzureTrace(int64_t n, double rate, int64_t in, int64_t out) {
  const std::string path = "/tmp/capplan_sim_bench_" + std::to_string(getpid()) + ".csv";
  std::ofstream f(path);
  f << "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  sim::WorkloadRng rng(42, 0);
  double t = 0;
  for (int64_t i = 0; i < n; ++i) {
    t += rng.StandardExponential() / rate;
    WriteAzureRow(f, static_cast<int64_t>(t * 1e7), in, out);
  }
  return path;
}

void BM_LlamaTrace_100k(benchmark::State& state) {
  // 100k rows at 6 req/s span 4.6 h, inside the format's one day.
  const std::string trace = WriteAzureTrace(100'000, 6.0, 1024, 256);
  nlohmann::json doc = {
      {"name", "llama-8b-trace"},
      {"model", "llama-3.1-8b"},
      {"hardware", "h200-sxm"},
      {"deployment", {{"engine", "vllm"}, {"gpus", 1}, {"tp", 1}}},
      {"workload", {{"kind", "trace"}, {"format", "azure_2023"}, {"path", trace}}}};
  auto sc = sim::ParseScenario(doc, "sim_bench");
  std::remove(trace.c_str());
  RunOrSkip(state, sc, RunScenarioBench);
}
BENCHMARK(BM_LlamaTrace_100k)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_VidurTrace_100k(benchmark::State& state) {
  const std::string trace = WriteAzureTrace(100'000, 6.0, 1024, 256);
  nlohmann::json doc = {
      {"name", "vidur-llama-8b"},
      {"model", "llama-3.1-8b"},
      {"hardware", "h200-sxm"},
      {"deployment",
       {{"engine", "vllm"},
        {"gpus", 1},
        {"tp", 1},
        {"chunked_prefill_tokens", 512},
        {"max_running_requests", 128}}},
      {"workload", {{"kind", "trace"}, {"format", "azure_2023"}, {"path", trace}}}};
  auto sc = sim::ParseScenario(doc, "sim_bench");
  std::remove(trace.c_str());
  RunOrSkip(state, sc, RunScenarioOutBench);
}
BENCHMARK(BM_VidurTrace_100k)
    ->ArgsProduct({{1}, {0, 1}})
    ->Args({0, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_KimiPrefill_1M(benchmark::State& state) {
  // Step by step, 1M requests would take minutes: 10,000 show its pace.
  const std::string n = state.range(0) != 0 ? "1000000" : "10000";
  auto sc = sim::LoadScenarioFile(
      DataPath("scenarios/kimi-k2.6-kv-fp8.json"),
      {"deployment.phase=both", "workload.num_requests=" + n, "workload.warmup_requests=0",
       "workload.input_tokens.value=8192", "workload.output_tokens.value=1024"});
  RunOrSkip(state, sc, RunScenarioOutBench);
}
BENCHMARK(BM_KimiPrefill_1M)
    ->ArgsProduct({{1}, {0, 1}})
    ->Args({0, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

void BM_AgentNoCache(benchmark::State& state) {
  RunFile(state, "scenarios/kimi-k2.6-agent-nocache.json", {});
}
BENCHMARK(BM_AgentNoCache)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_AgentCache(benchmark::State& state) {
  RunFile(state, "scenarios/kimi-k2.6-agent-cache.json", {});
}
BENCHMARK(BM_AgentCache)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

// Agentic sessions whose contexts outgrow HBM (about 3,000 requests of
// 10-50K-token contexts in 64-token blocks): /0 without a host tier, /1
// with 100 GiB per GPU (the prefix cache's host tier: copies, loads back,
// host evictions).
void BM_AgentHostTier(benchmark::State& state) {
  RunFile(state, "scenarios/agentic/kimi-k2.6-hicache.json",
          {state.range(0) != 0 ? R"(deployment.kv_tiers=[{"tier":"host","gib_per_gpu":100}])"
                               : "deployment.kv_tiers=[]"});
}
BENCHMARK(BM_AgentHostTier)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

// Takes every byte and keeps none: unlike a stream without a buffer, it
// stays good, so the formatting runs in full.
class DiscardBuf : public std::streambuf {
 protected:
  int_type overflow(int_type c) override { return c; }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

// n finished requests as a trace replay leaves them: nanosecond timestamps
// hours into the run, some failed.
std::vector<sim::ReqState> FinishedRequests(int64_t n) {
  std::mt19937_64 rng(42);
  std::vector<sim::ReqState> reqs(static_cast<size_t>(n));
  int64_t t = 0;
  for (int64_t i = 0; i < n; ++i) {
    sim::ReqState& r = reqs[static_cast<size_t>(i)];
    r.id = i;
    r.idx = static_cast<int32_t>(i);
    r.arrival_ns = t += static_cast<int64_t>(rng() % 300'000'000);
    r.input = 1 + static_cast<int64_t>(rng() % 8192);
    r.generated = 1 + static_cast<int64_t>(rng() % 1024);
    r.first_token_ns = r.arrival_ns + static_cast<int64_t>(rng() % 2'000'000'000);
    r.finish_ns = r.first_token_ns + r.generated * static_cast<int64_t>(rng() % 30'000'000);
    r.instance = static_cast<int32_t>(rng() % 4);
    r.rank = 0;
    r.retractions = static_cast<int32_t>(rng() % 50 == 0);
    r.warmup = i < 100;
    r.status = rng() % 100 == 0 ? sim::ReqStatus::kFailed : sim::ReqStatus::kDone;
  }
  return reqs;
}

void BM_RequestsCsv(benchmark::State& state) {
  const std::vector<sim::ReqState> reqs = FinishedRequests(state.range(0));
  DiscardBuf buf;
  std::ostream os(&buf);
  for (auto _ : state) {
    sim::RequestLog log({.csv = &os, .expected = state.range(0)});
    for (const sim::ReqState& r : reqs) log.OnRetired(r);
    log.Flush();
    benchmark::DoNotOptimize(log.passed());
  }
  state.counters["rows_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * state.range(0)), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RequestsCsv)->Arg(100'000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace capplan

BENCHMARK_MAIN();
