// DES and scheduler invariants against a fake step pricer (no model needed).
#include "tests/test_util/simulate.h"

#include <gtest/gtest.h>

#include "sim/scheduler.h"
#include "tests/sim/fake_pricer.h"

namespace capplan::sim {
namespace {

std::vector<SimRequestSpec> Fixed(int n, int64_t in, int64_t out, int64_t gap_ns = 0) {
  std::vector<SimRequestSpec> v;
  for (int i = 0; i < n; ++i) v.push_back({i, i * gap_ns, in, out, false});
  return v;
}

SimConfig Config(const std::string& sched, int64_t kv_tokens, int64_t concurrency) {
  SimConfig c;
  c.scheduler = sched;
  c.kv_tokens_per_rank = kv_tokens;
  c.page_size = 16;
  c.sched.chunked_prefill_tokens = 8192;
  c.concurrency = concurrency;
  return c;
}

// A pool that runs only `phase` of each request, with room for all their KV.
Result<SimResult> SimulatePhase(const std::string& sched, Phase phase, int64_t concurrency,
                                const std::vector<SimRequestSpec>& requests) {
  FakePricer p;
  SimConfig c = Config(sched, 100000, concurrency);
  c.sched.phase = phase;
  return Simulate(c, requests, p);
}

double OutputThroughput(const SimResult& r) {
  int64_t out = 0, t0 = INT64_MAX, t1 = 0;
  for (const auto& q : r.requests) {
    if (q.status != ReqStatus::kDone) continue;
    out += q.generated;
    t0 = std::min(t0, q.arrival_ns);
    t1 = std::max(t1, q.finish_ns);
  }
  return out / ((t1 - t0) / 1e9);
}

class SchedulerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SchedulerTest, AllRequestsCompleteAndConserve) {
  FakePricer p;
  auto r = Simulate(Config(GetParam(), 100000, 8), Fixed(50, 300, 40), p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const auto& q : r->requests) {
    EXPECT_EQ(q.status, ReqStatus::kDone);
    EXPECT_EQ(q.generated, 40);
    EXPECT_GE(q.first_token_ns, q.arrival_ns);
    EXPECT_GE(q.finish_ns, q.first_token_ns);
  }
  EXPECT_EQ(r->retractions, 0);
  EXPECT_FALSE(r->kv_bound);
  EXPECT_LE(r->max_running_requests, 8);
  // 49 gaps per request are pooled into ITL (the first token has none).
  EXPECT_EQ(r->itl_ns.count(), 50 * 39);
}

TEST_P(SchedulerTest, TightKvRetractsOrPreemptsAndStillConserves) {
  FakePricer p;
  // 8 requests of 100 + 400 tokens cannot all hold their KV in 1600 tokens.
  auto r = Simulate(Config(GetParam(), 1600, 8), Fixed(8, 100, 400), p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->kv_bound);
  EXPECT_LE(r->peak_kv_tokens, 1600);  // never over-committed
  for (const auto& q : r->requests) {
    EXPECT_EQ(q.status, ReqStatus::kDone);
    EXPECT_EQ(q.generated, 400);
  }
}

TEST_P(SchedulerTest, FcfsWithinAClass) {
  FakePricer p;
  // Identical requests arriving 1 us apart, one at a time admitted
  // (max_running_requests 1): first tokens come out in arrival order.
  SimConfig c = Config(GetParam(), 100000, 0);
  c.sched.max_running_requests = 1;
  auto r = Simulate(c, Fixed(20, 200, 5, 1000), p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (size_t i = 1; i < r->requests.size(); ++i) {
    EXPECT_LT(r->requests[i - 1].first_token_ns, r->requests[i].first_token_ns) << i;
  }
}

TEST_P(SchedulerTest, RequestLargerThanThePoolFails) {
  FakePricer p;
  auto specs = Fixed(3, 100, 10);
  specs[1].input_tokens = 5000;  // pool is 1024 tokens
  auto r = Simulate(Config(GetParam(), 1024, 2), specs, p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->requests[1].status, ReqStatus::kFailed);
  EXPECT_EQ(r->requests[0].status, ReqStatus::kDone);
  EXPECT_EQ(r->requests[2].status, ReqStatus::kDone);
}

TEST_P(SchedulerTest, Deterministic) {
  FakePricer p1, p2;
  auto a = Simulate(Config(GetParam(), 3000, 6), Fixed(40, 150, 90), p1);
  auto b = Simulate(Config(GetParam(), 3000, 6), Fixed(40, 150, 90), p2);
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->requests.size(); ++i) {
    EXPECT_EQ(a->requests[i].finish_ns, b->requests[i].finish_ns);
  }
  EXPECT_EQ(a->iterations, b->iterations);
}

TEST_P(SchedulerTest, MoreKvNeverLowersThroughputWhenKvBound) {
  double prev = 0;
  for (int64_t kv : {1200, 2400, 4800, 9600, 19200}) {
    FakePricer p;
    auto r = Simulate(Config(GetParam(), kv, 32), Fixed(96, 200, 100), p);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const double tput = OutputThroughput(*r);
    EXPECT_GE(tput, prev * 0.999) << "kv " << kv;
    prev = tput;
  }
}

TEST_P(SchedulerTest, ThroughputRisesWithConcurrencyUntilBound) {
  double prev = 0;
  for (int64_t conc : {1, 2, 4, 8, 16}) {
    FakePricer p;
    auto r = Simulate(Config(GetParam(), 1 << 20, conc), Fixed(64, 100, 50), p);
    ASSERT_TRUE(r.ok());
    const double tput = OutputThroughput(*r);
    EXPECT_GT(tput, prev * 1.2) << "concurrency " << conc;
    prev = tput;
  }
  // With the request cap at 4 the extra concurrency only queues.
  FakePricer p8, p16;
  SimConfig c8 = Config(GetParam(), 1 << 20, 8), c16 = Config(GetParam(), 1 << 20, 16);
  c8.sched.max_running_requests = c16.sched.max_running_requests = 4;
  auto a = Simulate(c8, Fixed(64, 100, 50), p8);
  auto b = Simulate(c16, Fixed(64, 100, 50), p16);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NEAR(OutputThroughput(*b) / OutputThroughput(*a), 1.0, 0.05);
}

TEST_P(SchedulerTest, DecodeOnlyFirstTokenIsOneDecodeStep) {
  auto r = SimulatePhase(GetParam(), Phase::kDecodeOnly, 1, Fixed(3, 1000, 4));
  ASSERT_TRUE(r.ok());
  const auto& q = r->requests[0];
  // One decode of context 1001: fixed + per_decode + 1001 * per_context.
  EXPECT_EQ(q.first_token_ns - q.arrival_ns, std::llround((1e-3 + 1e-5 + 1001e-8) * 1e9));
  EXPECT_EQ(r->iterations, 3 * 4);  // no prefill iterations at all
}

TEST_P(SchedulerTest, PrefillOnlyEndsAtFirstToken) {
  auto r = SimulatePhase(GetParam(), Phase::kPrefillOnly, 4, Fixed(10, 3000, 100));
  ASSERT_TRUE(r.ok());
  for (const auto& q : r->requests) {
    EXPECT_EQ(q.generated, 1);
    EXPECT_EQ(q.finish_ns, q.first_token_ns);
  }
}

INSTANTIATE_TEST_SUITE_P(Schedulers, SchedulerTest, ::testing::Values("sglang", "vllm"));

TEST(SimSimulator, SglangChunksLongPromptsAndRunsPrefillSeparately) {
  FakePricer p;
  SimConfig c = Config("sglang", 100000, 1);
  c.sched.chunked_prefill_tokens = 1000;
  auto r = Simulate(c, Fixed(1, 2500, 1), p);
  ASSERT_TRUE(r.ok());
  // 3 prefill chunks (1000, 1000, 500); the third yields the only token.
  EXPECT_EQ(r->iterations, 3);
  EXPECT_EQ(r->requests[0].first_token_ns, std::llround((3e-3 + 2500e-6) * 1e9));
}

TEST(SimSimulator, VllmMixesDecodeAndPrefill) {
  FakePricer p;
  SimConfig c = Config("vllm", 100000, 0);
  auto specs = Fixed(2, 100, 20);
  specs[1].arrival_ns = 5000000;  // arrives while request 0 decodes
  auto r = Simulate(c, specs, p);
  ASSERT_TRUE(r.ok());
  // Request 0 keeps producing tokens while request 1 prefills: its token
  // gaps stay one iteration long (no prefill-only stall).
  EXPECT_EQ(r->requests[0].status, ReqStatus::kDone);
  EXPECT_LT(r->itl_ns.Percentile(100), 3e6);
}

TEST(SimSimulator, SglangRetractsLatestAndRequeuesAtFront) {
  FakePricer p;
  SimConfig c = Config("sglang", 640, 4);
  c.sched.init_new_token_ratio = 0.01;  // optimistic admission forces retraction
  c.sched.min_new_token_ratio = 0.01;
  auto r = Simulate(c, Fixed(4, 64, 200), p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(r->retractions, 0);
  // The first admitted request is never the victim.
  EXPECT_EQ(r->requests[0].retractions, 0);
  int64_t total = 0;
  for (const auto& q : r->requests) total += q.retractions;
  EXPECT_EQ(total, r->retractions);
}

TEST(SimSimulator, ReplicasShareLoad) {
  FakePricer p;
  SimConfig c = Config("sglang", 100000, 8);
  c.replicas = 2;
  c.router = "least_kv";
  auto r = Simulate(c, Fixed(40, 100, 20), p);
  ASSERT_TRUE(r.ok());
  int on1 = 0;
  for (const auto& q : r->requests) on1 += q.instance == 1;
  EXPECT_GT(on1, 10);
  EXPECT_LT(on1, 30);
}

TEST(SimSimulator, DpAttentionRanksHaveOwnPools) {
  FakePricer p;
  SimConfig c = Config("sglang", 1600, 8);
  c.ranks_per_replica = 4;
  auto r = Simulate(c, Fixed(8, 200, 100), p);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kv_capacity_tokens_per_replica, 4 * 1600);
  std::set<int> ranks;
  for (const auto& q : r->requests) ranks.insert(q.rank);
  EXPECT_EQ(ranks.size(), 4u);
}

// A sink takes every request as it leaves: the pool keeps none, and its
// request table never holds more than the requests in flight.
class Collect : public RequestSink {
 public:
  void OnRetired(const ReqState& r) override { got.push_back(r); }
  std::vector<ReqState> got;
};

TEST_P(SchedulerTest, WithASinkOnlyRequestsInFlightAreHeld) {
  FakePricer p;
  Collect sink;
  SimConfig c = Config(GetParam(), 100000, 8);
  c.sink = &sink;
  auto streamed = Simulate(c, Fixed(2000, 300, 40), p);
  ASSERT_TRUE(streamed.ok()) << streamed.status().message();
  EXPECT_TRUE(streamed->requests.empty());
  // Slots of requests that left are reused from the next event on, so the
  // table holds at most the requests in flight and those that just left.
  EXPECT_LE(streamed->max_request_slots, 2 * 8);
  EXPECT_GE(streamed->max_request_slots, 1);
  EXPECT_EQ(streamed->max_concurrent_requests, 8);
  ASSERT_EQ(sink.got.size(), 2000u);
  // The same final states as a run that keeps them all.
  FakePricer p2;
  auto kept = Simulate(Config(GetParam(), 100000, 8), Fixed(2000, 300, 40), p2);
  ASSERT_TRUE(kept.ok());
  EXPECT_GT(kept->max_request_slots, 0);
  for (const ReqState& r : sink.got) {
    const ReqState& k = kept->requests[static_cast<size_t>(r.idx)];
    EXPECT_EQ(r.id, k.id);
    EXPECT_EQ(r.first_token_ns, k.first_token_ns);
    EXPECT_EQ(r.finish_ns, k.finish_ns);
    EXPECT_EQ(r.status, k.status);
  }
}

TEST(SimRequestTable, SlotsAreReusedAndReferencesStayPut) {
  RequestTable t(5000);
  ReqState& first = t.Open(0);
  first.input = 7;
  for (int32_t i = 1; i < 3000; ++i) t.Open(i).input = i;  // several chunks
  EXPECT_EQ(&t[0], &first);
  EXPECT_EQ(first.input, 7);
  EXPECT_EQ(t.open_count(), 3000);
  for (int32_t i = 0; i < 3000; ++i) t.Close(i);
  EXPECT_TRUE(t.closed(5));
  EXPECT_FALSE(t.open(5));
  EXPECT_FALSE(t.open(4000));
  EXPECT_FALSE(t.closed(4000));
  for (int32_t i = 3000; i < 5000; ++i) t.Open(i);
  EXPECT_EQ(t.slots(), 3000);  // the closed slots were reused
  EXPECT_EQ(t[4999].idx, 4999);
  EXPECT_EQ(t[4999].input, 0);  // a reused slot starts fresh
}

// Fast-forward's folded completions and its start from a step that
// finishes prompts, at their edges, against the iteration-by-iteration
// path: an open loop of ragged lengths (outputs of 1 and 2 tokens, warmup
// requests) with gaps from back-to-back to idle, on a KV pool from roomy
// (everything folds) to so tight that a skip finds no free page and puts
// the prompts back.
class FoldEdges : public ::testing::TestWithParam<std::tuple<std::string, int64_t>> {};

TEST_P(FoldEdges, SameRequestsAndTotalsAsEveryIteration) {
  const auto& [sched, kv_tokens] = GetParam();
  std::vector<SimRequestSpec> specs;
  int64_t t = 0;
  for (int i = 0; i < 400; ++i) {
    t += (i % 7) * 1'500'000 + (i % 11 == 0 ? 40'000'000 : 0);
    specs.push_back({i, t, 16 + (i * 37) % 700, 1 + (i * 53) % 90, i % 13 == 0});
  }
  SimResult r[2];
  for (int ff = 0; ff < 2; ++ff) {
    FakePricer p;
    SimConfig c = Config(sched, kv_tokens, 0);
    c.fast_forward = ff == 1;
    auto got = Simulate(c, specs, p);
    ASSERT_TRUE(got.ok()) << got.status().message();
    r[ff] = std::move(*got);
  }
  const SimResult &slow = r[0], &fast = r[1];
  ASSERT_EQ(fast.requests.size(), slow.requests.size());
  for (size_t i = 0; i < fast.requests.size(); ++i) {
    ASSERT_EQ(fast.requests[i].first_token_ns, slow.requests[i].first_token_ns) << i;
    ASSERT_EQ(fast.requests[i].finish_ns, slow.requests[i].finish_ns) << i;
    ASSERT_EQ(fast.requests[i].generated, slow.requests[i].generated) << i;
    ASSERT_EQ(fast.requests[i].retractions, slow.requests[i].retractions) << i;
  }
  EXPECT_EQ(fast.iterations, slow.iterations);
  EXPECT_EQ(fast.itl_ns.count(), slow.itl_ns.count());
  EXPECT_EQ(fast.itl_ns.mean(), slow.itl_ns.mean());  // exact integer sums
  for (double q : {50.0, 90.0, 99.0}) EXPECT_EQ(fast.itl_ns.Percentile(q), slow.itl_ns.Percentile(q));
  EXPECT_EQ(fast.peak_kv_tokens, slow.peak_kv_tokens);
  EXPECT_EQ(fast.peak_kv_pages_per_rank, slow.peak_kv_pages_per_rank);
  EXPECT_EQ(fast.max_concurrent_requests, slow.max_concurrent_requests);
  EXPECT_EQ(fast.retractions, slow.retractions);
  EXPECT_NEAR(fast.busy.seconds, slow.busy.seconds, 1e-9 * slow.busy.seconds);
  EXPECT_GT(fast.fast_forward_completions, 0);
  EXPECT_EQ(slow.fast_forward_completions, 0);
}

// The prompt that fills the pool's last page: the skip from its step finds
// no page for the next token and leaves the step as it was; the event path
// then retracts. Same answers either way.
TEST(FoldEdgesFullPool, APromptThatFillsThePoolIsPutBack) {
  // 64 pages of 16: A holds 11 when B (53 pages exactly) arrives.
  const std::vector<SimRequestSpec> specs = {{0, 0, 160, 50, false},
                                             {1, 10'000'000, 53 * 16, 5, false}};
  SimResult r[2];
  for (int ff = 0; ff < 2; ++ff) {
    FakePricer p;
    SimConfig c = Config("vllm", 64 * 16, 0);
    c.fast_forward = ff == 1;
    auto got = Simulate(c, specs, p);
    ASSERT_TRUE(got.ok()) << got.status().message();
    r[ff] = std::move(*got);
  }
  EXPECT_GT(r[0].retractions, 0);  // else the pool was not full
  EXPECT_EQ(r[1].retractions, r[0].retractions);
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(r[1].requests[i].first_token_ns, r[0].requests[i].first_token_ns) << i;
    EXPECT_EQ(r[1].requests[i].finish_ns, r[0].requests[i].finish_ns) << i;
  }
  EXPECT_EQ(r[1].itl_ns.count(), r[0].itl_ns.count());
  EXPECT_EQ(r[1].peak_kv_pages_per_rank, r[0].peak_kv_pages_per_rank);
}

// A second request arriving anywhere around the first one's last steps (every
// 50 us): the skip's last step end, which follows the arrival, may or may
// not finish the first request.
TEST(FoldEdgesArrival, AroundTheLastStepEnds) {
  for (const char* sched : {"sglang", "vllm"}) {
    for (int64_t at = 14'000'000; at < 26'000'000; at += 50'000) {
      const std::vector<SimRequestSpec> specs = {{0, 0, 100, 20, false}, {1, at, 100, 5, false}};
      SimResult r[2];
      for (int ff = 0; ff < 2; ++ff) {
        FakePricer p;
        SimConfig c = Config(sched, int64_t{1} << 20, 0);
        c.fast_forward = ff == 1;
        auto got = Simulate(c, specs, p);
        ASSERT_TRUE(got.ok()) << got.status().message();
        r[ff] = std::move(*got);
      }
      for (size_t i = 0; i < specs.size(); ++i) {
        ASSERT_EQ(r[1].requests[i].first_token_ns, r[0].requests[i].first_token_ns) << sched << at;
        ASSERT_EQ(r[1].requests[i].finish_ns, r[0].requests[i].finish_ns) << sched << " " << at;
        ASSERT_EQ(r[1].requests[i].generated, r[0].requests[i].generated) << sched << " " << at;
      }
      ASSERT_EQ(r[1].itl_ns.count(), r[0].itl_ns.count()) << sched << " " << at;
      ASSERT_EQ(r[1].itl_ns.mean(), r[0].itl_ns.mean()) << sched << " " << at;
      ASSERT_EQ(r[1].peak_kv_tokens, r[0].peak_kv_tokens) << sched << " " << at;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Pools, FoldEdges,
                         ::testing::Combine(::testing::Values("sglang", "vllm"),
                                            ::testing::Values(int64_t{1} << 20, 4096, 1200)));

TEST(SimSimulator, BadConfigIsAnError) {
  FakePricer p;
  SimConfig c = Config("sglang", 10, 1);  // less than a page
  EXPECT_EQ(Simulate(c, Fixed(1, 10, 1), p).status().code(), StatusCode::kInvalidConfig);
  c = Config("sglong", 1000, 1);
  auto r = Simulate(c, Fixed(1, 10, 1), p);
  EXPECT_EQ(r.status().code(), StatusCode::kUsage);
  EXPECT_NE(r.status().message().find("did you mean 'sglang'"), std::string::npos)
      << r.status().message();
}


// A scheduler that forms SGLang's batches but does not opt into
// fast-forward: a new scheduler only overrides what it means to, and the
// pool then steps every iteration (the same answers, no skipped ones).
class NoFastForward : public Scheduler {
 public:
  explicit NoFastForward(const SchedulerConfig& c) : Scheduler(c), inner_(MakeSglangScheduler(c)) {}
  void FormBatch(RankState& rank, SchedulerEnv& env, RankBatch* out) override {
    inner_->FormBatch(rank, env, out);
  }

 private:
  std::unique_ptr<Scheduler> inner_;
};

TEST(SchedulerPlugin, FastForwardIsOptIn) {
  if (!Schedulers().Find("test_no_fast_forward").ok()) {
    Schedulers().Add("test_no_fast_forward", [](const SchedulerConfig& c) {
      return std::unique_ptr<Scheduler>(std::make_unique<NoFastForward>(c));
    });
  }
  FakePricer p1, p2;
  auto plain = Simulate(Config("test_no_fast_forward", 100000, 8), Fixed(40, 300, 60), p1);
  auto sglang = Simulate(Config("sglang", 100000, 8), Fixed(40, 300, 60), p2);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  ASSERT_TRUE(sglang.ok()) << sglang.status().message();
  EXPECT_EQ(plain->fast_forward_iterations, 0);
  EXPECT_GT(sglang->fast_forward_iterations, 0);
  EXPECT_EQ(plain->iterations, sglang->iterations);
  EXPECT_EQ(plain->end_ns, sglang->end_ns);
  ASSERT_EQ(plain->requests.size(), sglang->requests.size());
  for (size_t i = 0; i < plain->requests.size(); ++i) {
    EXPECT_EQ(plain->requests[i].finish_ns, sglang->requests[i].finish_ns) << i;
  }
}

}  // namespace
}  // namespace capplan::sim
