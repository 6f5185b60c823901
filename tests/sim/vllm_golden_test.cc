// The "vllm" scheduler held, step by step, to traces of vLLM's own V1
// Scheduler (tests/data/golden/vllm, made by scripts/golden/
// vllm_sched_trace.py; how: scripts/golden/README.md). Each trace names its
// config and requests (all arrive before step 0); the simulator runs them
// iteration by iteration on a pricer with a fixed step time, and every
// step's batch (requests and their token counts), preemptions, first tokens
// and completions must equal the engine's (for two 0.10.2 traces with prefix
// caching, all but the batches: VllmGoldenOutcomes says why).
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sim/request_table.h"
#include "sim/scheduler.h"
#include "tests/sim/fake_pricer.h"
#include "tests/test_util/simulate.h"

namespace capplan::sim {
namespace {

using Json = nlohmann::json;

// What one step did, as the trace spells it (ids are request ids).
struct StepRecord {
  std::map<int64_t, int64_t> sched;  // id -> tokens computed
  std::set<int64_t> preempted, first, finished;
};

struct Trace {
  Json header;
  std::vector<StepRecord> steps;
};

std::set<int64_t> IdSet(const Json& a) {
  std::set<int64_t> s;
  for (const Json& v : a) s.insert(v.get<int64_t>());
  return s;
}

Trace ReadTrace(const std::string& name) {
  const std::string path = std::string(CAPPLAN_SOURCE_DIR) + "/tests/data/golden/vllm/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  Trace t;
  std::string line;
  std::getline(in, line);
  t.header = Json::parse(line);
  EXPECT_EQ(t.header.at("format").get<std::string>(), "capplan.golden_sched.v1");
  while (std::getline(in, line)) {
    const Json j = Json::parse(line);
    StepRecord s;
    for (const Json& e : j.at("sched")) {
      if (e.is_array()) {
        s.sched[e[0].get<int64_t>()] = e[1].get<int64_t>();
      } else {
        s.sched[e.get<int64_t>()] = 1;
      }
    }
    s.preempted = IdSet(j.at("preempted"));
    s.first = IdSet(j.at("first"));
    s.finished = IdSet(j.at("finished"));
    EXPECT_EQ(j.at("step").get<size_t>(), t.steps.size()) << name;
    t.steps.push_back(std::move(s));
  }
  return t;
}

// The steps the simulator formed: wraps the "vllm" scheduler and records
// each batch and the requests each FormBatch preempted.
std::vector<StepRecord>* g_steps = nullptr;

class Recorder : public Scheduler {
 public:
  explicit Recorder(const SchedulerConfig& c) : Scheduler(c), inner_(MakeVllmScheduler(c)) {}
  void FormBatch(RankState& rank, SchedulerEnv& env, RankBatch* out) override {
    RequestTable& reqs = *env.reqs;
    std::map<int32_t, int32_t> retractions;
    for (int32_t i : rank.running) retractions[i] = reqs[i].retractions;
    for (int32_t i : rank.prefilling) retractions[i] = reqs[i].retractions;
    inner_->FormBatch(rank, env, out);
    if (out->empty()) return;
    StepRecord s;
    for (const auto& [i, n] : retractions) {
      if (reqs[i].retractions > n) s.preempted.insert(reqs[i].id);
    }
    if (out->decode) {
      for (int32_t i : rank.running) s.sched[reqs[i].id] = 1;
    }
    for (const PrefillChunk& c : out->prefill) s.sched[reqs[c.req].id] = c.tokens;
    g_steps->push_back(std::move(s));
  }

 private:
  std::unique_ptr<Scheduler> inner_;
};

constexpr int64_t kStepNs = 1000000;  // the pricer's fixed step: 1 ms

std::string Ids(const std::set<int64_t>& s) {
  std::ostringstream o;
  for (int64_t v : s) o << v << ' ';
  return o.str();
}

std::string Sched(const std::map<int64_t, int64_t>& m) {
  std::ostringstream o;
  for (const auto& [id, n] : m) o << id << ':' << n << ' ';
  return o.str();
}

// The trace's engine config as the simulator's (iteration by iteration).
SimConfig ConfigOf(const Json& header, bool self_only = false) {
  const Json& c = header.at("config");
  SimConfig cfg;
  cfg.scheduler = "vllm";
  cfg.page_size = c.at("block_size").get<int64_t>();
  // vLLM's block pool keeps one block as its null block.
  cfg.kv_tokens_per_rank = c.at("usable_blocks").get<int64_t>() * cfg.page_size;
  cfg.sched.chunked_prefill_tokens = c.at("max_num_batched_tokens").get<int64_t>();
  cfg.sched.max_running_requests = c.at("max_num_seqs").get<int64_t>();
  cfg.sched.admit_whole_prompt = c.value("scheduler_reserve_full_isl", false);
  // Not modelled: a trace with a watermark cannot match.
  EXPECT_EQ(c.value("watermark_blocks", 0), 0);
  if (c.at("enable_prefix_caching").get<bool>()) {
    // Distinct prompts: only a preempted request's own blocks can hit.
    cfg.prefix_cache = true;
    cfg.prefix_self_only = self_only;
    cfg.prefix_block_tokens = cfg.page_size;
    cfg.content = [](int32_t idx, int64_t n_blocks, std::vector<int64_t>* out) {
      out->clear();
      for (int64_t b = 0; b < n_blocks; ++b) out->push_back((int64_t{idx} << 32) + b);
    };
  }
  cfg.fast_forward = false;
  return cfg;
}

std::vector<SimRequestSpec> SpecsOf(const Json& header) {
  std::vector<SimRequestSpec> specs;
  for (const Json& r : header.at("requests")) {
    SimRequestSpec s;
    s.id = r.at("id").get<int64_t>();
    s.input_tokens = r.at("prompt_tokens").get<int64_t>();
    s.output_tokens = r.at("output_tokens").get<int64_t>();
    specs.push_back(s);
  }
  return specs;
}

// Runs the trace's config and requests through the simulator.
std::vector<StepRecord> Simulated(const Trace& t, bool self_only = false) {
  if (!Schedulers().Find("test_vllm_golden").ok()) {
    Schedulers().Add("test_vllm_golden", [](const SchedulerConfig& c) {
      return std::unique_ptr<Scheduler>(std::make_unique<Recorder>(c));
    });
  }
  SimConfig cfg = ConfigOf(t.header, self_only);
  cfg.scheduler = "test_vllm_golden";
  std::vector<SimRequestSpec> specs = SpecsOf(t.header);
  std::vector<StepRecord> steps;
  g_steps = &steps;
  FakePricer p;
  p.per_prefill_token_s = p.per_decode_s = p.per_context_token_s = 0;
  auto res = Simulate(cfg, specs, p);
  g_steps = nullptr;
  EXPECT_TRUE(res.ok()) << res.status().message();
  if (!res.ok()) return steps;
  // Step k runs from k ms to k + 1 ms: the step a token came at.
  for (const ReqState& r : res->requests) {
    const auto step = [](int64_t ns) { return static_cast<size_t>(ns / kStepNs - 1); };
    EXPECT_EQ(r.status, ReqStatus::kDone) << r.id;
    if (r.first_token_ns >= 0 && step(r.first_token_ns) < steps.size()) {
      steps[step(r.first_token_ns)].first.insert(r.id);
    }
    if (r.finish_ns >= 0 && step(r.finish_ns) < steps.size()) {
      steps[step(r.finish_ns)].finished.insert(r.id);
    }
  }
  return steps;
}

struct Summary {
  size_t steps = 0;
  int64_t preemptions = 0;
  double mean_ttft_steps = 0;
};

Summary Summarize(const std::vector<StepRecord>& steps) {
  Summary s;
  s.steps = steps.size();
  int64_t n = 0, sum = 0;
  for (size_t k = 0; k < steps.size(); ++k) {
    s.preemptions += static_cast<int64_t>(steps[k].preempted.size());
    n += static_cast<int64_t>(steps[k].first.size());
    sum += static_cast<int64_t>(steps[k].first.size() * (k + 1));
  }
  s.mean_ttft_steps = n > 0 ? static_cast<double>(sum) / static_cast<double>(n) : 0;
  return s;
}

class VllmGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(VllmGolden, EveryStepMatchesTheEngine) {
  const Trace golden = ReadTrace(GetParam());
  ASSERT_FALSE(golden.steps.empty());
  const std::vector<StepRecord> sim = Simulated(golden);
  const Summary g = Summarize(golden.steps), s = Summarize(sim);
  std::cout << GetParam() << ": engine " << g.steps << " steps, " << g.preemptions
            << " preemptions, mean TTFT " << g.mean_ttft_steps << " steps; capplan " << s.steps
            << " steps, " << s.preemptions << " preemptions, mean TTFT " << s.mean_ttft_steps
            << " steps\n";
  const size_t n = std::min(golden.steps.size(), sim.size());
  for (size_t k = 0; k < n; ++k) {
    const StepRecord& a = golden.steps[k];
    const StepRecord& b = sim[k];
    ASSERT_EQ(Sched(a.sched), Sched(b.sched)) << "step " << k << ": scheduled (id:tokens)";
    ASSERT_EQ(Ids(a.preempted), Ids(b.preempted)) << "step " << k << ": preempted";
    ASSERT_EQ(Ids(a.first), Ids(b.first)) << "step " << k << ": first tokens";
    ASSERT_EQ(Ids(a.finished), Ids(b.finished)) << "step " << k << ": finished";
  }
  EXPECT_EQ(golden.steps.size(), sim.size());
}

// The plain "vllm" scheduler on the trace's run: fast-forward (steady
// decode in closed form) gives every request the same times as stepping.
TEST_P(VllmGolden, FastForwardMatchesStepping) {
  const Trace golden = ReadTrace(GetParam());
  std::vector<SimResult> res;
  for (const bool ff : {false, true}) {
    SimConfig cfg = ConfigOf(golden.header);
    cfg.fast_forward = ff;
    FakePricer p;
    auto r = Simulate(cfg, SpecsOf(golden.header), p);
    ASSERT_TRUE(r.ok()) << r.status().message();
    res.push_back(std::move(*r));
  }
  EXPECT_GT(res[1].fast_forward_iterations, 0);
  EXPECT_EQ(res[0].iterations, res[1].iterations);
  EXPECT_EQ(res[0].retractions, res[1].retractions);
  ASSERT_EQ(res[0].requests.size(), res[1].requests.size());
  for (size_t i = 0; i < res[0].requests.size(); ++i) {
    EXPECT_EQ(res[0].requests[i].first_token_ns, res[1].requests[i].first_token_ns) << i;
    EXPECT_EQ(res[0].requests[i].finish_ns, res[1].requests[i].finish_ns) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Traces, VllmGolden,
    ::testing::Values("kv_starved_0.10.2.jsonl", "chunked_prefill_0.10.2.jsonl",
                      "mixed_0.10.2.jsonl", "kv_starved_0.33.0.jsonl",
                      "chunked_prefill_0.33.0.jsonl", "mixed_0.33.0.jsonl",
                      "chunked_prefill_apc_0.10.2.jsonl", "kv_starved_apc_0.33.0.jsonl",
                      "chunked_prefill_apc_0.33.0.jsonl", "mixed_apc_0.33.0.jsonl"));

// vLLM 0.10.2 with prefix caching: its block pool keeps one FIFO free queue,
// so a freed block without a hash (a request's partial last block) is
// reused only after older cached blocks are evicted; 0.33.0 reuses such
// blocks first (BlockPool.free_blocks), as the simulator's pool does (free
// pages before evicting cached ones). A resumed request then finds a block
// or a few fewer cached in 0.10.2, and the chunk sizes of its recompute
// differ; every step's preemptions, first tokens and completions still
// match.
class VllmGoldenOutcomes : public ::testing::TestWithParam<const char*> {};

TEST_P(VllmGoldenOutcomes, PreemptionsFirstTokensAndCompletionsMatch) {
  const Trace golden = ReadTrace(GetParam());
  const std::vector<StepRecord> sim = Simulated(golden);
  ASSERT_EQ(golden.steps.size(), sim.size());
  for (size_t k = 0; k < sim.size(); ++k) {
    ASSERT_EQ(Ids(golden.steps[k].preempted), Ids(sim[k].preempted)) << "step " << k;
    ASSERT_EQ(Ids(golden.steps[k].first), Ids(sim[k].first)) << "step " << k;
    ASSERT_EQ(Ids(golden.steps[k].finished), Ids(sim[k].finished)) << "step " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Traces, VllmGoldenOutcomes,
                         ::testing::Values("kv_starved_apc_0.10.2.jsonl",
                                           "mixed_apc_0.10.2.jsonl"));

// The simulator's cache for a workload without content identity
// (SimConfig::prefix_self_only): a completed request's blocks are cached
// unindexed (evicted in their LRU turn, never looked up) and only a
// preempted request looks its own blocks up. Every step must still be the
// engine's: the eviction order decides how much of a resumed request is
// recomputed.
class VllmGoldenSelfOnly : public ::testing::TestWithParam<const char*> {};

TEST_P(VllmGoldenSelfOnly, EveryStepMatchesTheEngine) {
  const Trace golden = ReadTrace(GetParam());
  const std::vector<StepRecord> sim = Simulated(golden, /*self_only=*/true);
  ASSERT_EQ(golden.steps.size(), sim.size());
  for (size_t k = 0; k < sim.size(); ++k) {
    ASSERT_EQ(Sched(golden.steps[k].sched), Sched(sim[k].sched)) << "step " << k;
    ASSERT_EQ(Ids(golden.steps[k].preempted), Ids(sim[k].preempted)) << "step " << k;
    ASSERT_EQ(Ids(golden.steps[k].first), Ids(sim[k].first)) << "step " << k;
    ASSERT_EQ(Ids(golden.steps[k].finished), Ids(sim[k].finished)) << "step " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Traces, VllmGoldenSelfOnly,
                         ::testing::Values("chunked_prefill_apc_0.10.2.jsonl",
                                           "kv_starved_apc_0.33.0.jsonl",
                                           "chunked_prefill_apc_0.33.0.jsonl",
                                           "mixed_apc_0.33.0.jsonl"));

}  // namespace
}  // namespace capplan::sim
