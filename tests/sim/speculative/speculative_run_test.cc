// Speculative decoding in the simulator: emission per step against hand
// counts and the closed form, pages and conservation, determinism, the
// draft's memory and price, and the deployment field's bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sim/scenario.h"
#include "sim/simulate.h"
#include "sim/speculative/acceptance.h"
#include "sim/step_explain.h"
#include "tests/sim/fake_pricer.h"
#include "tests/test_util/simulate.h"

namespace capplan::sim {
namespace {

std::vector<SimRequestSpec> Fixed(int n, int64_t in, int64_t out) {
  std::vector<SimRequestSpec> v;
  for (int i = 0; i < n; ++i) v.push_back({i, 0, in, out, false});
  return v;
}

SimConfig Config(const std::string& sched, std::vector<double> p, int64_t kv_tokens = 100000) {
  SimConfig c;
  c.scheduler = sched;
  c.kv_tokens_per_rank = kv_tokens;
  c.page_size = 16;
  c.sched.chunked_prefill_tokens = 8192;
  c.sched.seed = 7;
  if (!p.empty()) {
    std::string err;
    EXPECT_TRUE(speculative::MakeAcceptance(p, &c.sched.speculative, &err)) << err;
  }
  return c;
}

class SpecRun : public ::testing::TestWithParam<std::string> {};

// Every draft accepted: each decode step emits k + 1 = 4 tokens, the last
// one capped at what is left. 1 + 25 tokens: the prefill's first token,
// then steps of 4, 4, 4, 4, 4, 4, 1: seven decode steps.
TEST_P(SpecRun, AllAcceptedEmitsDraftsPlusOnePerStep) {
  FakePricer p;
  auto r = Simulate(Config(GetParam(), {1, 1, 1}), Fixed(1, 100, 26), p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ReqState& q = r->requests[0];
  EXPECT_EQ(q.status, ReqStatus::kDone);
  EXPECT_EQ(q.generated, 26);
  EXPECT_EQ(r->iterations, 1 + 7);
  EXPECT_EQ(r->spec_decode_steps, 7);
  EXPECT_EQ(r->spec_emitted_tokens, 25);
  // One streamed chunk per step: seven gaps after the first token.
  EXPECT_EQ(r->itl_ns.count(), 7);
}

// Nothing accepted: one token per step, exactly the timeline of a run
// without speculation under the same pricer.
TEST_P(SpecRun, NothingAcceptedMatchesPlainDecoding) {
  FakePricer p0, p1;
  auto plain = Simulate(Config(GetParam(), {}), Fixed(6, 200, 30), p0);
  auto none = Simulate(Config(GetParam(), {0, 0}), Fixed(6, 200, 30), p1);
  ASSERT_TRUE(plain.ok() && none.ok());
  ASSERT_EQ(plain->requests.size(), none->requests.size());
  for (size_t i = 0; i < plain->requests.size(); ++i) {
    EXPECT_EQ(plain->requests[i].finish_ns, none->requests[i].finish_ns) << i;
    EXPECT_EQ(plain->requests[i].first_token_ns, none->requests[i].first_token_ns) << i;
  }
  EXPECT_DOUBLE_EQ(static_cast<double>(none->spec_emitted_tokens) / none->spec_decode_steps, 1.0);
}

// The mean emitted per step converges on 1 + p1 + p1 p2 + p1 p2 p3 = 2.3.
// 64 requests x ~870 steps: the standard error of the mean is about
// 0.8 / sqrt(55,000) = 0.0035; 0.02 is over five of them. Only each
// request's last step is capped, which moves the mean by < 0.002.
TEST_P(SpecRun, MeanTokensPerStepIsTheClosedForm) {
  FakePricer p;
  auto r = Simulate(Config(GetParam(), {0.8, 0.5, 0.25}), Fixed(64, 64, 2000), p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double mean = static_cast<double>(r->spec_emitted_tokens) / r->spec_decode_steps;
  EXPECT_NEAR(mean, 2.3, 0.02);
  for (const auto& q : r->requests) EXPECT_EQ(q.generated, 2000);
}

// A pool too small for every request: pages are taken for the tokens a
// step emits, requests are retracted or preempted, and every page is back
// at the end (Simulate's conservation check fails the run otherwise).
TEST_P(SpecRun, TightPoolRetractsAndConserves) {
  FakePricer p;
  auto r = Simulate(Config(GetParam(), {0.9, 0.9, 0.9, 0.9}, 2400), Fixed(12, 100, 400), p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(r->retractions, 0);
  for (const auto& q : r->requests) {
    EXPECT_EQ(q.status, ReqStatus::kDone);
    EXPECT_EQ(q.generated, 400);
  }
}

TEST_P(SpecRun, DeterministicForASeedAndNotAcrossSeeds) {
  FakePricer p;
  SimConfig c = Config(GetParam(), {0.7, 0.6, 0.5});
  auto a = Simulate(c, Fixed(16, 300, 200), p);
  auto b = Simulate(c, Fixed(16, 300, 200), p);
  c.sched.seed = 8;
  auto other = Simulate(c, Fixed(16, 300, 200), p);
  ASSERT_TRUE(a.ok() && b.ok() && other.ok());
  EXPECT_EQ(a->end_ns, b->end_ns);
  EXPECT_EQ(a->spec_emitted_tokens, b->spec_emitted_tokens);
  EXPECT_EQ(a->spec_decode_steps, b->spec_decode_steps);
  EXPECT_NE(a->spec_decode_steps, other->spec_decode_steps);
}

INSTANTIATE_TEST_SUITE_P(Schedulers, SpecRun, ::testing::Values("sglang", "vllm"));

// ---- Whole runs on the model library ----

nlohmann::json Base() {
  return nlohmann::json::parse(R"({
    "name": "t", "model": "deepseek-v3", "hardware": "h200-sxm",
    "deployment": {"engine": "sglang", "gpus": 8, "tp": 8, "kv_cache": "fp8"},
    "workload": {"kind": "closed_loop", "concurrency": 32, "num_requests": 96, "warmup_requests": 32,
                 "input_tokens": {"dist": "fixed", "value": 2000},
                 "output_tokens": {"dist": "fixed", "value": 500}, "seed": 1}})");
}

Result<schema::RunSummary> RunDoc(const nlohmann::json& doc) {
  CAPPLAN_ASSIGN_OR_RETURN(auto sc, ParseScenario(doc, "t.json"));
  CAPPLAN_ASSIGN_OR_RETURN(RunResult r, RunScenario(*sc, RunOptions{}));
  return r.summary;
}

TEST(SpecScenario, MtpOnDeepSeekCostsMemoryAndSpeedsDecode) {
  auto off = RunDoc(Base());
  auto doc = Base();
  doc["deployment"]["speculative"] = {
      {"method", "mtp"}, {"draft_tokens", 3}, {"acceptance", {0.8, 0.6, 0.4}}};
  auto on = RunDoc(doc);
  ASSERT_TRUE(off.ok()) << off.status().message();
  ASSERT_TRUE(on.ok()) << on.status().message();
  const schema::PoolSummary& a = off->pools.at(0);
  const schema::PoolSummary& b = on->pools.at(0);
  // Memory: the draft's layer weights, its own KV (one MTP layer on 61:
  // each token costs 62/61 of a cell) and SGLang's +2 GiB reserve.
  ASSERT_TRUE(b.memory->draft_weights_bytes_per_gpu.has_value());
  EXPECT_GT(*b.memory->draft_weights_bytes_per_gpu, 1'000'000'000);  // an MoE layer, FP8
  EXPECT_FALSE(a.memory->draft_weights_bytes_per_gpu.has_value());
  EXPECT_LT(*b.kv_capacity_tokens, *a.kv_capacity_tokens);
  EXPECT_LT(*b.memory->mem_fraction_static, *a.memory->mem_fraction_static);
  EXPECT_EQ(b.deployment["max_running_requests"], 48);  // SGLang's speculative default
  EXPECT_EQ(b.deployment["overlap_schedule"], false);
  EXPECT_EQ(b.deployment["speculative"]["draft_layers"], 1);
  // 1 + 0.8 + 0.48 + 0.192 = 2.472 expected; 64 x 499 decode tokens.
  EXPECT_NEAR(*b.accept_length_mean, 2.472, 0.06);
  EXPECT_GT(*b.spec_draft_time_share, 0.0);
  EXPECT_GT(*b.spec_verify_time_share, 0.5);
  EXPECT_LT(*b.spec_verify_time_share + *b.spec_draft_time_share, 1.0);
  EXPECT_LT(*on->tpot.median, *off->tpot.median);
  EXPECT_FALSE(a.accept_length_mean.has_value());
}

// --explain-step prints the decode step the simulator prices: with MTP the
// target verifies k + 1 positions per request and the draft's passes follow,
// named draft.; the priced step (launch and host costs on top) is no less
// than its ops.
double After(const std::string& text, const std::string& label) {
  const size_t at = text.find(label);
  return at == std::string::npos ? -1 : std::stod(text.substr(at + label.size()));
}

TEST(SpecScenario, ExplainStepShowsVerifyAndDraftPasses) {
  auto doc = Base();
  auto plain = ParseScenario(doc, "t.json");
  doc["deployment"]["speculative"] = {
      {"method", "mtp"}, {"draft_tokens", 3}, {"acceptance", {0.8, 0.6, 0.4}}};
  auto spec = ParseScenario(doc, "t.json");
  ASSERT_TRUE(plain.ok() && spec.ok());
  ExplainOptions o;
  o.decode_batch = 8;
  o.decode_context = 2000;
  auto a = ExplainSteps(**plain, o);
  auto b = ExplainSteps(**spec, o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(a->find("draft."), std::string::npos);
  EXPECT_NE(b->find("verifying 3 draft tokens each"), std::string::npos);
  // The verify pass reads 8 x 4 query rows; the draft's extend pass the same
  // rows once, then its two one-token passes (count 2) at the batch of 8.
  EXPECT_NE(b->find("| attn.mla_decode | 61 |"), std::string::npos) << *b;
  EXPECT_NE(b->find("q 32, kv"), std::string::npos) << *b;
  EXPECT_NE(b->find("| draft.attn.mla_decode | 1 |"), std::string::npos) << *b;
  EXPECT_NE(b->find("| draft.attn.mla_decode | 2 |"), std::string::npos) << *b;
  const double ops = After(*b, "Ops total ");
  const double draft = After(*b, "(draft ");
  const double step = After(*b, "Step as the simulator prices it: ");
  EXPECT_GT(draft, 0);
  EXPECT_LT(draft, ops);
  EXPECT_GE(step, ops);
  // Verifying four positions costs more than decoding one.
  EXPECT_GT(step, After(*a, "Step as the simulator prices it: "));
  // 1 + 0.8 + 0.8 x 0.6 + 0.8 x 0.6 x 0.4 = 2.472 tokens a step.
  EXPECT_NEAR(After(*b, "Each request emits "), 2.472, 1e-3);
  EXPECT_NEAR(After(*b, "(the acceptance): "), step / 2.472, 0.1);
  EXPECT_EQ(a->find("Each request emits"), std::string::npos);
}

TEST(SpecScenario, BadInputNamesThePath) {
  struct Case {
    nlohmann::json spec;
    std::string path, words;
  } cases[] = {
      {{{"method", "mtp"}, {"draft_tokens", 0}, {"mean_accept_length", 1.5}},
       "/deployment/speculative/draft_tokens",
       "[1, 16]"},
      {{{"method", "mtp"}, {"draft_tokens", 17}, {"mean_accept_length", 1.5}},
       "/deployment/speculative/draft_tokens",
       "[1, 16]"},
      {{{"method", "mtp"}, {"draft_tokens", 2}, {"acceptance", {0.5, 1.5}}},
       "/deployment/speculative/acceptance",
       "position 1"},
      {{{"method", "mtp"}, {"draft_tokens", 2}, {"acceptance", {0.5}}},
       "/deployment/speculative/acceptance",
       "one probability per draft token"},
      {{{"method", "mtp"},
        {"draft_tokens", 2},
        {"acceptance", {0.5, 0.5}},
        {"mean_accept_length", 2}},
       "/deployment/speculative/mean_accept_length",
       "exactly one"},
      {{{"method", "mtp"}, {"draft_tokens", 2}, {"mean_accept_length", 3.5}},
       "/deployment/speculative/mean_accept_length",
       "[1, 3]"},
      {{{"method", "medusa"}}, "/deployment/speculative/method", "eagle"},
      {{{"method", "eagle"}, {"draft_tokens", 2}, {"mean_accept_length", 2}, {"drafts", 1}},
       "/deployment/speculative/drafts",
       "draft_tokens"},
  };
  for (const Case& c : cases) {
    auto doc = Base();
    doc["deployment"]["speculative"] = c.spec;
    auto r = ParseScenario(doc, "t.json");
    ASSERT_FALSE(r.ok()) << c.spec.dump();
    const std::string& m = r.status().message();
    EXPECT_EQ(r.status().code(), StatusCode::kUsage) << m;
    EXPECT_NE(m.find("t.json: " + c.path), std::string::npos) << m;
    EXPECT_NE(m.find(c.words), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

// The draft-token limit is the engine version's, so a bad version is named
// where it is written, not as a bare engine error.
TEST(SpecScenario, BadEngineVersionIsNamedBeforeTheDraftLimit) {
  auto doc = Base();
  doc["deployment"]["engine_version"] = "0.0.1";
  doc["deployment"]["speculative"] = {
      {"method", "mtp"}, {"draft_tokens", 2}, {"mean_accept_length", 2}};
  auto r = ParseScenario(doc, "t.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t.json: /deployment/engine_version"), std::string::npos)
      << r.status().message();
}

TEST(SpecScenario, MtpNeedsAModelWithMtpLayers) {
  auto doc = Base();
  doc["model"] = "llama-3.1-8b";
  doc["deployment"] = {{"engine", "sglang"}, {"gpus", 1}, {"tp", 1}};
  doc["deployment"]["speculative"] = {
      {"method", "mtp"}, {"draft_tokens", 2}, {"mean_accept_length", 2}};
  auto r = RunDoc(doc);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/deployment/speculative/method"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("eagle"), std::string::npos) << r.status().message();
  doc["deployment"]["speculative"]["method"] = "eagle";
  auto e = RunDoc(doc);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->pools.at(0).deployment["speculative"]["draft_layers"], 1);
}

}  // namespace
}  // namespace capplan::sim
