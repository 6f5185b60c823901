// Host time per step as a pipeline: the engine loop (GPU work, the host's
// per-step cost, CPU scheduling serial or overlapped with the GPU) and
// output processing (in the loop, or a process of its own that sets the
// pace when it is the slower stage). Hand-computed timelines at 1,000
// running requests, the shipped entries' facts, a run that shows the
// output stage, and bad input.
#include <gtest/gtest.h>

#include <string>

#include "models/engine_step_costs.h"
#include "sim/cost_model.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "sim/step_explain.h"

namespace capplan::sim {
namespace {

// 1,000 running decode requests, each returning one token a step.
StepContext ThousandRequests(bool overlap, bool separate) {
  StepContext c;
  c.overlap_schedule = overlap;
  c.output_separate = separate;
  c.requests = 1000;
  c.tokens_out = 1000;
  c.host_s = 1e-3;
  c.cpu_schedule_s = 2e-3;
  c.cpu_schedule_per_request_s = 20e-6;  // 20 ms for 1,000 requests
  c.cpu_output_per_token_s = 7.3e-6;     // 7.3 ms for 1,000 tokens
  return c;
}

TEST(HostTime, SerialLoopAddsEveryTerm) {
  // GPU 40 | host 1 | scheduling 2 + 20 | output 7.3: 70.3 ms.
  const HostTime h = PriceHost(ThousandRequests(false, false), 40e-3);
  EXPECT_NEAR(h.schedule, 22e-3, 1e-12);
  EXPECT_NEAR(h.schedule_shown, 22e-3, 1e-12);
  EXPECT_NEAR(h.output, 7.3e-3, 1e-12);
  EXPECT_NEAR(h.step, 70.3e-3, 1e-12);
}

TEST(HostTime, OverlappedSchedulingHidesBehindALongerGpuStep) {
  // The 22 ms of scheduling run while the 40 ms GPU step runs: 40 + 1 + 7.3.
  const HostTime h = PriceHost(ThousandRequests(true, false), 40e-3);
  EXPECT_NEAR(h.schedule_shown, 0, 1e-12);
  EXPECT_NEAR(h.step, 48.3e-3, 1e-12);
  // A 10 ms GPU step leaves 12 ms of the scheduling showing: 10 + 1 + 12 + 7.3.
  const HostTime s = PriceHost(ThousandRequests(true, false), 10e-3);
  EXPECT_NEAR(s.schedule_shown, 12e-3, 1e-12);
  EXPECT_NEAR(s.step, 30.3e-3, 1e-12);
}

TEST(HostTime, SeparateOutputStageSetsThePaceOnlyWhenSlower) {
  // The engine loop takes 41 ms; the output stage's 7.3 ms run beside it.
  const HostTime h = PriceHost(ThousandRequests(true, true), 40e-3);
  EXPECT_NEAR(h.engine, 41e-3, 1e-12);
  EXPECT_NEAR(h.step, 41e-3, 1e-12);
  // 30 us a token: the output stage's 30 ms outlast the engine's 23 ms.
  StepContext slow = ThousandRequests(true, true);
  slow.cpu_output_per_token_s = 30e-6;
  const HostTime s = PriceHost(slow, 10e-3);
  EXPECT_NEAR(s.engine, 23e-3, 1e-12);
  EXPECT_NEAR(s.step, 30e-3, 1e-12);
}

TEST(HostTime, ShippedEntriesNameTheirOutputStageAndCpu) {
  for (const auto& [engine, version] :
       {std::pair<std::string, std::array<int, 3>>{"vllm", {0, 8, 5}},
        {"vllm", {0, 19, 1}},
        {"sglang", {0, 5, 4}}}) {
    auto c = models::StepCostsFor(engine, version);
    ASSERT_TRUE(c.ok()) << c.status().message();
    // vLLM V1 and SGLang both turn outputs into responses outside the loop.
    EXPECT_EQ(c->output_stage, models::OutputStage::kSeparateProcess) << engine;
    EXPECT_FALSE(c->cpu.empty());
    EXPECT_GT(c->cpu_output_per_token_s, 0);
    EXPECT_NE(c->sources.at("cpu_output_per_token_s").find("assumption"), std::string::npos);
    EXPECT_FALSE(c->sources.at("output_stage").empty());
  }
}

nlohmann::json ThousandStreams() {
  return nlohmann::json::parse(R"({
    "name": "t", "model": "llama-3.1-8b", "hardware": "h100-sxm",
    "deployment": {"gpus": 1, "tp": 1, "engine": "vllm", "engine_version": "0.19.0"},
    "workload": {"kind": "closed_loop", "concurrency": 1000, "num_requests": 3000,
                 "warmup_requests": 1000,
                 "input_tokens": {"dist": "fixed", "value": 64},
                 "output_tokens": {"dist": "fixed", "value": 256}, "seed": 1}})");
}

Result<schema::RunSummary> RunDoc(const nlohmann::json& doc) {
  CAPPLAN_ASSIGN_OR_RETURN(auto sc, ParseScenario(doc, "t.json"));
  CAPPLAN_ASSIGN_OR_RETURN(RunResult r, RunScenario(*sc, RunOptions{}));
  return r.summary;
}

// 40 us a token at 1,000 running requests is 40 ms a step: in the engine
// loop it adds to every decode step; as a process of its own it replaces
// the engine's shorter step.
TEST(HostTime, OutputStageShowsAtAThousandStreams) {
  nlohmann::json doc = ThousandStreams();
  doc["deployment"]["step_costs"] = {{"cpu_output_per_token_s", 0.0}};
  auto none = RunDoc(doc);
  doc["deployment"]["step_costs"] = {{"cpu_output_per_token_s", 40e-6},
                                     {"output_stage", "engine_loop"}};
  auto in_loop = RunDoc(doc);
  doc["deployment"]["step_costs"]["output_stage"] = "separate_process";
  auto separate = RunDoc(doc);
  ASSERT_TRUE(none.ok()) << none.status().message();
  ASSERT_TRUE(in_loop.ok()) << in_loop.status().message();
  ASSERT_TRUE(separate.ok()) << separate.status().message();
  const double base = *none->tpot.median;
  EXPECT_NEAR(*in_loop->tpot.median - base, 40.0, 4.0) << base;
  // The separate stage paces the step at its own 40 ms when that is longer.
  EXPECT_NEAR(*separate->tpot.median, std::max(base, 40.0), 4.0) << base;
  EXPECT_LT(*separate->tpot.median, *in_loop->tpot.median);
}

TEST(HostTime, ExplainStepPrintsTheHostSide) {
  auto sc = ParseScenario(ThousandStreams(), "t.json");
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  ExplainOptions e;
  e.decode_batch = 1000;
  e.decode_context = 200;
  auto text = ExplainSteps(**sc, e);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_NE(text->find("output processing 7300.0 us for 1000 tokens"), std::string::npos) << *text;
  EXPECT_NE(text->find("measured on CPU: not stated"), std::string::npos);
  EXPECT_NE(text->find("cpu_output_per_token_s: assumption"), std::string::npos);
}

TEST(HostTime, BadOutputStageIsNamedAtItsPath) {
  nlohmann::json doc = ThousandStreams();
  doc["deployment"]["step_costs"] = {{"output_stage", "inline"}};
  auto r = ParseScenario(doc, "t.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/deployment/step_costs/output_stage"), std::string::npos)
      << r.status().message();
}

TEST(HostTime, EntryWithoutOutputStageIsRefused) {
  const char* doc = R"({"format": "capplan.engine_step_costs.v1", "engines": {"vllm": [
    {"version": "0.8.0",
     "host_s": {"value": 0, "provenance": {"kind": "default", "source": "s"}},
     "cpu_schedule_s": {"value": 0, "provenance": {"kind": "default", "source": "s"}},
     "cpu_schedule_per_request_s": {"value": 0, "provenance": {"kind": "default", "source": "s"}},
     "cpu_output_per_token_s": {"value": 0, "provenance": {"kind": "default", "source": "s"}},
     "cpu": {"value": "x", "provenance": {"kind": "source", "source": "s"}}}]}})";
  auto r = models::ParseEngineStepCosts(doc, "costs.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("output_stage"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace capplan::sim
