// Closed loops as benchmark clients run them (the closed_loop workload's
// `client`, sim/workload/clients.h): each client's length sampling, the
// default, and what it does to a fixed-length loop at concurrency 64: under
// lock_step every request starts and finishes with the others and prompts
// are computed in waves; under a benchmark client's range ratio they are
// not.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/json_util.h"
#include "sim/workload/workload.h"
#include "tests/sim/fake_pricer.h"
#include "tests/test_util/simulate.h"

namespace capplan::sim {
namespace {

Result<Workload> Load(const std::string& extra, int64_t concurrency = 64, int64_t n = 640,
                      int64_t in = 2048, int64_t out = 256) {
  nlohmann::json j = {{"kind", "closed_loop"},
                      {"concurrency", concurrency},
                      {"num_requests", n},
                      {"input_tokens", {{"dist", "fixed"}, {"value", in}}},
                      {"output_tokens", {{"dist", "fixed"}, {"value", out}}},
                      {"seed", 1}};
  if (!extra.empty()) j.merge_patch(nlohmann::json::parse(extra));
  JsonObject o(j, "scenario.json", "/workload");
  return LoadWorkload(o, "");
}

std::pair<int64_t, int64_t> Pair(int64_t lo, int64_t hi) { return {lo, hi}; }

std::pair<int64_t, int64_t> Range(const Workload& w, bool input) {
  int64_t lo = INT64_MAX, hi = 0;
  for (const auto& r : w.requests) {
    const int64_t v = input ? r.input_tokens : r.output_tokens;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  return {lo, hi};
}

TEST(SimClosedLoopClient, EachClientSamplesFixedLengthsItsWay) {
  auto lock = Load(R"({"client": "lock_step"})");
  ASSERT_TRUE(lock.ok()) << lock.status().message();
  EXPECT_EQ(Range(*lock, true), Pair(2048, 2048));
  // InferenceX: uniform in [int(0.8 L), L].
  auto ix = Load("");
  ASSERT_TRUE(ix.ok()) << ix.status().message();
  EXPECT_GE(Range(*ix, true).first, 1638);
  EXPECT_EQ(Range(*ix, true).second, 2048);
  EXPECT_GE(Range(*ix, false).first, 204);
  EXPECT_LT(Range(*ix, true).first, 1700);  // 640 draws reach near the bottom
  EXPECT_NE(ix->source.find("client=inferencex(range_ratio=0.8)"), std::string::npos);
  // vllm bench serve: r = 0 is fixed; r = 0.5 is [1024, 3072].
  auto v0 = Load(R"({"client": "vllm_bench_serve"})");
  ASSERT_TRUE(v0.ok());
  EXPECT_EQ(Range(*v0, true), Pair(2048, 2048));
  auto v5 = Load(R"({"client": "vllm_bench_serve", "range_ratio": 0.5})");
  ASSERT_TRUE(v5.ok());
  EXPECT_GE(Range(*v5, true).first, 1024);
  EXPECT_LE(Range(*v5, true).second, 3072);
  EXPECT_GT(Range(*v5, true).second, 2048);
  // SGLang bench_serving: r = 0 is uniform in [1, L].
  auto sg = Load(R"({"client": "sglang_bench_serving"})");
  ASSERT_TRUE(sg.ok());
  EXPECT_LT(Range(*sg, true).first, 100);
  EXPECT_LE(Range(*sg, true).second, 2048);
  // Explicit distributions are what they say under any client.
  auto ln = Load(R"({"input_tokens": {"dist": "uniform", "value": null, "min": 10, "max": 20}})");
  ASSERT_TRUE(ln.ok());
  EXPECT_EQ(Range(*ln, true), Pair(10, 20));
}

TEST(SimClosedLoopClient, OneBatchDefaultsToLockStepAndErrorsNameTheField) {
  auto batch = Load("", /*concurrency=*/8, /*n=*/8);
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(Range(*batch, true), Pair(2048, 2048));
  auto typo = Load(R"({"client": "inferencx"})");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("/workload/client"), std::string::npos);
  EXPECT_NE(typo.status().message().find("inferencex"), std::string::npos);
  auto ratio = Load(R"({"client": "lock_step", "range_ratio": 0.5})");
  ASSERT_FALSE(ratio.ok());
  EXPECT_NE(ratio.status().message().find("range_ratio"), std::string::npos);
  auto big = Load(R"({"client": "vllm_bench_serve", "range_ratio": 1})");
  EXPECT_FALSE(big.ok());  // vLLM requires r < 1
  // The same seed, the same lengths.
  auto again = Load("");
  auto first = Load("");
  ASSERT_TRUE(again.ok() && first.ok());
  for (size_t i = 0; i < again->requests.size(); ++i) {
    EXPECT_EQ(again->requests[i].input_tokens, first->requests[i].input_tokens);
  }
}

struct Waves {
  int64_t largest_finish_group = 0;  // requests finishing at one instant, at most
  double median_ttft_ms = 0;
};

Waves RunLoop(const Workload& w, const std::string& scheduler) {
  SimConfig c;
  c.scheduler = scheduler;
  c.kv_tokens_per_rank = 1 << 22;
  c.page_size = 16;
  c.sched.chunked_prefill_tokens = 8192;
  c.concurrency = w.concurrency;
  std::vector<SimRequestSpec> specs;
  for (const auto& r : w.requests) {
    specs.push_back({r.id, r.arrival_ns, r.input_tokens, r.output_tokens, false});
  }
  FakePricer p;  // prefill tokens cost time: a wave of prompts delays first tokens
  auto r = Simulate(c, specs, p);
  EXPECT_TRUE(r.ok()) << r.status().message();
  Waves out;
  if (!r.ok()) return out;
  std::map<int64_t, int64_t> at;
  std::vector<double> ttft;
  for (const auto& q : r->requests) {
    out.largest_finish_group = std::max(out.largest_finish_group, ++at[q.finish_ns]);
    ttft.push_back((q.first_token_ns - q.arrival_ns) / 1e6);
  }
  std::nth_element(ttft.begin(), ttft.begin() + ttft.size() / 2, ttft.end());
  out.median_ttft_ms = ttft[ttft.size() / 2];
  return out;
}

// 640 requests of 2,048 in / 256 out at concurrency 64, FakePricer prices
// (1 us per prompt token). Under lock_step the requests that start together
// finish together and their successors' prompts queue behind each other in
// a wave, every round (SGLang: median TTFT 83 ms); under InferenceX's client
// (range ratio 0.8) or SGLang's (r = 0) completions spread over many steps
// and a new prompt mostly runs alone (4.4 and 2.5 ms). vLLM: 11 ms against
// 4.9 and 4.0 ms.
TEST(SimClosedLoopClient, FixedLengthLoopPrefillsInWavesOnlyUnderLockStep) {
  auto lock = Load(R"({"client": "lock_step"})");
  auto ix = Load(R"({"client": "inferencex"})");
  auto sg = Load(R"({"client": "sglang_bench_serving"})");
  ASSERT_TRUE(lock.ok() && ix.ok() && sg.ok());
  for (const std::string sched : {"sglang", "vllm"}) {
    SCOPED_TRACE(sched);
    const Waves l = RunLoop(*lock, sched), x = RunLoop(*ix, sched), s = RunLoop(*sg, sched);
    // SGLang decodes all 64 together after their prompts; vLLM's 8,192-token
    // budget takes 4 prompts a step, so its lock-step groups are of 4.
    EXPECT_EQ(l.largest_finish_group, sched == "sglang" ? 64 : 4);
    EXPECT_LE(x.largest_finish_group, 8);
    EXPECT_LE(s.largest_finish_group, 8);
    EXPECT_LT(x.median_ttft_ms * 2, l.median_ttft_ms);
    EXPECT_LT(s.median_ttft_ms * 2, l.median_ttft_ms);
  }
}

}  // namespace
}  // namespace capplan::sim
