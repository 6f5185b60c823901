// The scenario cases the equality tests run: every shipped scenario, and
// variants covering both schedulers, PD, DP attention, several replicas,
// open loop, traces, and a KV-bound run with retractions.
#ifndef CAPPLAN_TESTS_SIM_SCENARIO_CASES_H_
#define CAPPLAN_TESTS_SIM_SCENARIO_CASES_H_

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "common/data_path.h"

namespace capplan::sim {

struct Case {
  std::string name;
  std::string file;  // under scenarios/
  std::vector<std::string> sets;
  nlohmann::json workload;  // replaces the file's workload when not null
};

inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

inline std::vector<Case> Cases() {
  std::vector<Case> cases;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(DataPath("scenarios"))) {
    if (e.path().extension() == ".json") files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) cases.push_back({f.substr(0, f.size() - 5), f, {}, nullptr});
  cases.push_back({"kimi_dp_attention",
                   "kimi-k2.6-kv-fp8.json",
                   {"deployment.dp_attention=true", "workload.num_requests=256"},
                   nullptr});
  cases.push_back({"kimi_two_replicas_least_kv",
                   "kimi-k2.6-kv-fp8.json",
                   {"deployment.replicas=2", "deployment.router=least_kv"},
                   nullptr});
  // Decode-only open loop: requests arrive one by one into a running batch,
  // so skips start from their first tokens and fold completions.
  cases.push_back({"kimi_open_loop_first_tokens",
                   "kimi-k2.6-kv-fp8.json",
                   {},
                   {{"kind", "open_loop"},
                    {"request_rate", 4},
                    {"num_requests", 300},
                    {"warmup_requests", 20},
                    {"input_tokens", {{"dist", "uniform"}, {"min", 2000}, {"max", 16000}}},
                    {"output_tokens", {{"dist", "uniform"}, {"min", 1}, {"max", 900}}}}});
  // Decode-only closed loop whose requests finish one by one, warm-up ones
  // among them: most skips end at a step end that finishes a request and
  // start from the batch the previous one left (ServingPool's digest).
  for (const char* scheduler : {"sglang", "vllm"}) {
    cases.push_back({std::string("kimi_closed_loop_staggered_") + scheduler,
                     "kimi-k2.6-kv-fp8.json",
                     {std::string("deployment.scheduler=") + scheduler, "workload.num_requests=400",
                      "workload.warmup_requests=40", "workload.output_tokens.range_ratio=0.5"},
                     nullptr});
  }
  // KV-bound: admission waits on pages and 4 running requests are retracted.
  cases.push_back({"kimi_kv_bound_retractions",
                   "kimi-k2.6-kv-bf16.json",
                   {"deployment.mem_fraction_static=0.86", "workload.concurrency=96",
                    "workload.num_requests=192", "workload.warmup_requests=0",
                    "workload.output_tokens.value=1024"},
                   nullptr});
  // Open loop over several replicas: only arrivals bound a replica's skip.
  cases.push_back(
      {"llama_three_replicas_least_kv",
       "llama-3.1-70b-tp4.json",
       {"deployment.replicas=3", "deployment.router=least_kv", "workload.request_rate=20"},
       nullptr});
  cases.push_back({"llama_vllm_two_replicas",
                   "llama-3.1-70b-tp4-vllm.json",
                   {"deployment.replicas=2", "workload.request_rate=12"},
                   nullptr});
  cases.push_back(
      {"qwen_vllm_closed_loop", "qwen3-235b-tp8.json", {"deployment.scheduler=vllm"}, nullptr});
  // KV-starved vLLM: long prompts into a small pool, so running requests
  // preempt the newest (about 190 preemptions).
  cases.push_back({"qwen_vllm_kv_bound_preempts",
                   "qwen3-235b-tp8.json",
                   {"deployment.scheduler=vllm", "deployment.mem_fraction_static=0.6",
                    "workload.concurrency=128", "workload.num_requests=256",
                    "workload.input_tokens.median=24000", "workload.input_tokens.p90=40000",
                    "workload.input_tokens.max=60000"},
                   nullptr});
  cases.push_back(
      {"llama_trace_azure",
       "llama-3.1-70b-tp4.json",
       {},
       {{"kind", "trace"}, {"format", "azure_2023"}, {"path", "traces/azure_2023_sample.csv"}}});
  cases.push_back(
      {"llama_vllm_trace_mooncake",
       "llama-3.1-70b-tp4-vllm.json",
       {},
       {{"kind", "trace"}, {"format", "mooncake"}, {"path", "traces/mooncake_sample.jsonl"}}});
  // Mixed chunked-prefill steps: vLLM steps every running decode with the
  // next chunk of a prompt (Vidur's workload: 512-token budget, at most 128
  // running, 1024 in / 256 out at 6 req/s), SGLang packs chunks of
  // consecutive prompts into its prefill steps (both phases, closed loop),
  // with the prefix cache, and in a PD prefill pool.
  const nlohmann::json vidur = {{"kind", "open_loop"},
                                {"request_rate", 6},
                                {"num_requests", 400},
                                {"warmup_requests", 20},
                                {"input_tokens", {{"dist", "fixed"}, {"value", 1024}}},
                                {"output_tokens", {{"dist", "fixed"}, {"value", 256}}}};
  cases.push_back({"llama_vllm_chunked_prefill_512",
                   "llama-3.1-70b-tp4-vllm.json",
                   {"deployment.chunked_prefill_tokens=512", "deployment.max_running_requests=128"},
                   vidur});
  cases.push_back({"llama_vllm_chunked_prefill_96_lognormal",
                   "llama-3.1-70b-tp4-vllm.json",
                   {"deployment.chunked_prefill_tokens=96", "deployment.max_running_requests=24",
                    "workload.request_rate=20"},
                   nullptr});
  for (const char* scheduler : {"sglang", "vllm"}) {
    cases.push_back({std::string("kimi_both_phases_closed_loop_") + scheduler,
                     "kimi-k2.6-kv-fp8.json",
                     {"deployment.phase=both", std::string("deployment.scheduler=") + scheduler,
                      "deployment.chunked_prefill_tokens=4096", "workload.num_requests=300",
                      "workload.warmup_requests=20", "workload.input_tokens.value=8192",
                      "workload.output_tokens.value=256"},
                     nullptr});
  }
  cases.push_back({"kimi_agent_cache_vllm_chunked",
                   "kimi-k2.6-agent-cache.json",
                   {"deployment.scheduler=vllm", "deployment.chunked_prefill_tokens=2048"},
                   nullptr});
  cases.push_back({"pd_kimi_prefill_chunked",
                   "pd-kimi-k2.6.json",
                   {"pd.prefill.chunked_prefill_tokens=2048"},
                   nullptr});
  return cases;
}

// A case's name as a test name (letters, digits and '_').
template <typename Info>
std::string CaseNameOf(const Info& info) {
  std::string n = info.param.name;
  std::replace_if(
      n.begin(), n.end(), [](char ch) { return !std::isalnum(ch); }, '_');
  return n;
}
inline constexpr auto CaseName = [](const auto& info) { return CaseNameOf(info); };

}  // namespace capplan::sim

#endif  // CAPPLAN_TESTS_SIM_SCENARIO_CASES_H_
