// The PD hooks of a ServingPool (sim/serving_pool.h) against a fake pricer:
// a decode pool's prealloc queue reserves FIFO without skipping, reserved
// requests are admitted with their pages, and a prefill pool holds computed
// prompts until released. A tiny driver here plays the other pool.
#include "sim/serving_pool.h"

#include <gtest/gtest.h>

#include "tests/sim/fake_pricer.h"

namespace capplan::sim {
namespace {

// Delivers every reserved request `delay_ns` later (a stand-in for the
// prefill pool and the transfer); records what the pool reports.
class Echo : public PoolListener {
 public:
  EventQueue q;
  ServingPool* pool = nullptr;
  int64_t delay_ns = 5000;
  std::vector<int32_t> reserved, held, failed;
  std::vector<int64_t> reserve_ns;
  void OnReserved(int, int32_t idx, int64_t now) override {
    reserved.push_back(idx);
    reserve_ns.push_back(now);
    q.Push(now + delay_ns, EventClass::kTransferDone, idx);
  }
  void OnPromptHeld(int, int32_t idx, int64_t now) override {
    held.push_back(idx);
    q.Push(now + delay_ns, EventClass::kTransferDone, idx);
  }
  void OnFailed(int, int32_t idx, int64_t) override { failed.push_back(idx); }
  int64_t Run(bool deliver) {
    int64_t now = 0;
    while (!q.empty()) {
      const Event e = q.Pop();
      now = e.time_ns;
      if (e.cls != EventClass::kTransferDone) {
        pool->Handle(e);
      } else if (deliver) {
        pool->Deliver(static_cast<int32_t>(e.target), now);
      } else {
        pool->Release(static_cast<int32_t>(e.target), now);
      }
    }
    return now;
  }
};

SimConfig Pool(Phase phase, int64_t kv_tokens) {
  SimConfig c;
  c.kv_tokens_per_rank = kv_tokens;
  c.page_size = 16;
  c.sched.chunked_prefill_tokens = 8192;
  c.sched.phase = phase;
  EXPECT_TRUE(FillSglangDefaults(&c.sched).ok());  // as PrepareRun resolves a deployment
  return c;
}

// 1000-token pool: request 0 (600 + 0.7 * 10 promised) reserves; request 1
// (same size) does not fit beside it; request 2 (16 tokens) would, but must
// not overtake request 1. Once request 0 finishes, 1 and 2 reserve in order.
TEST(SimServingPool, PreallocReservesFifoWithoutSkipping) {
  FakePricer p;
  Echo echo;
  const std::vector<SimRequestSpec> specs = {
      {0, 0, 600, 10, false}, {1, 1, 600, 10, false}, {2, 2, 16, 1, false}};
  const SpecVector pool_src(specs);
  auto pool = ServingPool::Create(1, Pool(Phase::kDecodeOnly, 1000), pool_src, p, &echo.q,
                                  {.reserve_before_admit = true}, &echo);
  ASSERT_TRUE(pool.ok()) << pool.status().message();
  echo.pool = pool->get();
  (*pool)->StartArrivals();
  const int64_t end = echo.Run(/*deliver=*/true);
  auto r = (*pool)->TakeResult(end);  // conservation: every page back
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(echo.reserved, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(echo.reserve_ns[0], 0);
  EXPECT_GE(echo.reserve_ns[1], r->requests[0].finish_ns);
  EXPECT_EQ(echo.reserve_ns[2], echo.reserve_ns[1]);
  for (const auto& q : r->requests) {
    EXPECT_EQ(q.status, ReqStatus::kDone);
    // Admitted with the reserved pages: decodes only, from its KV arrival.
    EXPECT_GE(q.admit_ns, q.arrival_ns + echo.delay_ns);
  }
  EXPECT_EQ(r->requests[0].generated, 10);
  // Requests 1 and 2 are reserved together: ceil(600 / 16) + 1 pages.
  EXPECT_EQ(r->peak_transfer_pages, 38 + 1);
  EXPECT_LE(r->peak_kv_pages_per_rank, r->kv_pages_per_rank);
}

// A request that can never fit fails at reservation, without blocking the
// queue behind it.
TEST(SimServingPool, PreallocFailsWhatCanNeverFit) {
  FakePricer p;
  Echo echo;
  const std::vector<SimRequestSpec> specs = {{0, 0, 5000, 10, false}, {1, 0, 100, 10, false}};
  const SpecVector pool_src(specs);
  auto pool = ServingPool::Create(1, Pool(Phase::kDecodeOnly, 1000), pool_src, p, &echo.q,
                                  {.reserve_before_admit = true}, &echo);
  ASSERT_TRUE(pool.ok());
  echo.pool = pool->get();
  (*pool)->StartArrivals();
  auto r = (*pool)->TakeResult(echo.Run(true));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(echo.failed, (std::vector<int32_t>{0}));
  EXPECT_EQ(echo.reserved, (std::vector<int32_t>{1}));
  EXPECT_EQ(r->requests[0].status, ReqStatus::kFailed);
  EXPECT_EQ(r->requests[1].status, ReqStatus::kDone);
}

// A prefill pool holding computed prompts: with room for two 400-token
// prompts, the third is admitted only after a held prompt is released.
TEST(SimServingPool, HeldPromptsBackPressureThePrefillPool) {
  FakePricer p;
  Echo echo;
  echo.delay_ns = 1000000000;  // a 1 s transfer, far longer than a prefill
  const std::vector<SimRequestSpec> specs = {
      {0, 0, 400, 5, false}, {1, 0, 400, 5, false}, {2, 0, 400, 5, false}};
  const SpecVector pool_src(specs);
  auto pool = ServingPool::Create(0, Pool(Phase::kPrefillOnly, 832), pool_src, p, &echo.q,
                                  {.hold_kv_after_prefill = true}, &echo);
  ASSERT_TRUE(pool.ok());
  echo.pool = pool->get();
  (*pool)->StartArrivals();
  auto r = (*pool)->TakeResult(echo.Run(/*deliver=*/false));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(echo.held, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(r->peak_transfer_pages, 2 * 25);  // two prompts of 25 pages held at once
  EXPECT_EQ(r->peak_kv_pages_per_rank, 2 * 25);
  // Released at 1 s after its prefill ended; request 2 waited for that.
  EXPECT_GE(r->requests[2].admit_ns, echo.delay_ns);
  EXPECT_LT(r->requests[1].admit_ns, echo.delay_ns);
  for (const auto& q : r->requests) EXPECT_EQ(q.status, ReqStatus::kDone);
}

}  // namespace
}  // namespace capplan::sim

namespace capplan::sim {
namespace {

// A follow-up names an earlier request; PD pools take follow-ups too (the
// decode pool issues them: tests/sim/pd/pd_run_test.cc).
TEST(SimServingPool, FollowUpsMustNameARequest) {
  FakePricer p;
  EventQueue q;
  std::vector<SimRequestSpec> specs = {{0, 0, 100, 2, false}, {1, 0, 120, 2, false}};
  specs[1].after = 0;
  const SpecVector pool_src(specs);
  auto pool = ServingPool::Create(0, Pool(Phase::kPrefillOnly, 10000), pool_src, p, &q,
                                  {.hold_kv_after_prefill = true});
  EXPECT_TRUE(pool.ok()) << pool.status().message();
  specs[1].after = 7;
  const SpecVector bad_src(specs);
  auto bad = ServingPool::Create(0, Pool(Phase::kBoth, 10000), bad_src, p, &q);
  ASSERT_FALSE(bad.ok());
}

// The engine's scheduling knobs are filled where the deployment is
// resolved; a pool never fills them itself and refuses a config without.
TEST(SimServingPool, RefusesUnfilledSchedulingKnobs) {
  FakePricer p;
  EventQueue q;
  const std::vector<SimRequestSpec> specs = {{0, 0, 100, 2, false}};
  const SpecVector pool_src(specs);
  SimConfig c = Pool(Phase::kBoth, 10000);
  c.sched.init_new_token_ratio = 0;
  auto pool = ServingPool::Create(0, c, pool_src, p, &q);
  ASSERT_FALSE(pool.ok());
  EXPECT_NE(pool.status().message().find("FillSglangDefaults"), std::string::npos);
}

}  // namespace
}  // namespace capplan::sim

namespace capplan::sim {
namespace {

// Runs a co-located pool to the end and returns its result.
SimResult RunPool(const SimConfig& config, const std::vector<SimRequestSpec>& specs) {
  FakePricer p;
  EventQueue q;
  const SpecVector pool_src(specs);
  SimConfig c = config;
  EXPECT_TRUE(FillSglangDefaults(&c.sched).ok());
  auto pool = ServingPool::Create(0, c, pool_src, p, &q);
  EXPECT_TRUE(pool.ok()) << pool.status().message();
  (*pool)->StartArrivals();
  int64_t end = 0;
  while (!q.empty()) {
    const Event e = q.Pop();
    end = e.time_ns;
    (*pool)->Handle(e);
  }
  auto r = (*pool)->TakeResult(end);  // conservation, cache pages included
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move(*r);
}

// Follow-up turns: request 1 is issued 1 ms after request 0 completes and
// request 2 1 ms after request 1; request 3 is independent. Nothing else
// delays a follow-up in an empty pool, so its arrival is exact.
TEST(SimServingPool, FollowUpsArriveThinkTimeAfterTheirPredecessor) {
  std::vector<SimRequestSpec> specs = {
      {0, 0, 100, 2, false}, {1, 0, 120, 2, false}, {2, 0, 140, 2, false}, {3, 5, 50, 1, false}};
  specs[1].after = 0;
  specs[1].think_ns = 1'000'000;
  specs[2].after = 1;
  specs[2].think_ns = 1'000'000;
  const SimResult r = RunPool(Pool(Phase::kBoth, 10000), specs);
  const auto& rq = r.requests;
  for (const auto& x : rq) EXPECT_EQ(x.status, ReqStatus::kDone);
  EXPECT_EQ(rq[1].arrival_ns, rq[0].finish_ns + 1'000'000);
  EXPECT_EQ(rq[2].arrival_ns, rq[1].finish_ns + 1'000'000);
  EXPECT_EQ(rq[3].arrival_ns, 5);
}

// Content: request i's stream is blocks ids[i][0..]; 16-token blocks.
SimConfig CachedPool(int64_t kv_tokens, std::vector<std::vector<int64_t>> ids) {
  SimConfig c = Pool(Phase::kBoth, kv_tokens);
  c.concurrency = 1;  // one at a time: each request sees the previous one's blocks
  c.prefix_cache = true;
  c.prefix_block_tokens = 16;
  c.content = [ids = std::move(ids)](int32_t idx, int64_t n, std::vector<int64_t>* out) {
    const auto& v = ids[static_cast<size_t>(idx)];
    out->assign(v.begin(), v.begin() + std::min<int64_t>(n, std::ssize(v)));
  };
  return c;
}

// Request 0: 64-token prompt + 2 output tokens, blocks 1 2 3 4. Request 1:
// 70-token prompt starting with blocks 1 2 3, then its own. Request 1 finds
// blocks 1-3 (48 tokens); request 0's 4th block (tokens 48..63) differs.
TEST(SimServingPool, PrefixCacheSkipsCachedPromptTokens) {
  for (const char* scheduler : {"sglang", "vllm"}) {
    SCOPED_TRACE(scheduler);
    const std::vector<SimRequestSpec> specs = {{0, 0, 64, 2, false}, {1, 0, 70, 2, false}};
    SimConfig c = CachedPool(10000, {{1, 2, 3, 4}, {1, 2, 3, 9, 9}});
    c.scheduler = scheduler;
    const SimResult r = RunPool(c, specs);
    EXPECT_EQ(r.prefix_prompt_tokens, 64 + 70);
    EXPECT_EQ(r.prefix_hit_tokens, 48);
    EXPECT_EQ(r.requests[1].status, ReqStatus::kDone);
    // Without the cache the same run computes every prompt token.
    c.prefix_cache = false;
    const SimResult off = RunPool(c, specs);
    EXPECT_EQ(off.prefix_hit_tokens, 0);
    EXPECT_GT(r.requests[1].first_token_ns - r.requests[1].arrival_ns, 0);
    EXPECT_LT(r.requests[1].first_token_ns - r.requests[1].arrival_ns,
              off.requests[1].first_token_ns - off.requests[1].arrival_ns);
  }
}

// A whole-prompt match still computes the last block: an engine needs the
// last token's logits.
TEST(SimServingPool, PrefixCacheNeverMatchesTheWholePrompt) {
  const std::vector<SimRequestSpec> specs = {{0, 0, 64, 1, false}, {1, 0, 64, 1, false}};
  SimConfig c = CachedPool(10000, {{1, 2, 3, 4}, {1, 2, 3, 4}});
  c.want_trace = true;
  const SimResult r = RunPool(c, specs);
  EXPECT_EQ(r.prefix_hit_tokens, 48);
  // The trace's prefix_cache counter shows the hit.
  int64_t last_hits = -1;
  for (const auto& e : r.trace_events) {
    if (e["name"] == "prefix_cache") last_hits = e["args"]["hit_tokens_total"].get<int64_t>();
  }
  EXPECT_EQ(last_hits, 48);
}

// A 128-token pool (8 pages). Request 0 leaves 4 cached blocks (64 tokens);
// request 1 (100 tokens, unrelated) needs 7 pages: 4 are free, so 3 cached
// least recently used cached blocks are evicted and nothing is retracted.
TEST(SimServingPool, FullPoolEvictsCacheBeforeRetracting) {
  const std::vector<SimRequestSpec> specs = {{0, 0, 60, 5, false}, {1, 0, 100, 8, false}};
  const SimResult r = RunPool(CachedPool(128, {{1, 2, 3, 4}, {7, 8, 9, 10, 11, 12, 13}}), specs);
  EXPECT_EQ(r.retractions, 0);
  EXPECT_GT(r.prefix_evicted_blocks, 0);
  for (const auto& q : r.requests) EXPECT_EQ(q.status, ReqStatus::kDone);
}

}  // namespace
}  // namespace capplan::sim

namespace capplan::sim {
namespace {

// Two replicas; requests 2 and 3 repeat the prefixes of requests 1 and 0.
// Round robin alternates blindly; cache_aware sends each repeated prefix to
// the replica that saw it.
TEST(SimServingPool, CacheAwareRouterSendsARepeatedPrefixToTheSameReplica) {
  const std::vector<SimRequestSpec> specs = {
      {0, 0, 64, 2, false}, {1, 1, 64, 2, false}, {2, 2, 64, 2, false}, {3, 3, 64, 2, false}};
  const std::vector<std::vector<int64_t>> ids = {{1, 2, 3, 4}, {5, 6, 7, 8}, {5, 6, 7, 9},
                                                 {1, 2, 3, 9}};
  for (const char* router : {"round_robin", "cache_aware"}) {
    SCOPED_TRACE(router);
    SimConfig c = CachedPool(10000, ids);
    c.concurrency = 0;
    c.replicas = 2;
    c.router = router;
    const SimResult r = RunPool(c, specs);
    EXPECT_EQ(r.requests[0].instance, 0);
    EXPECT_EQ(r.requests[1].instance, 1);
    if (std::string(router) == "cache_aware") {
      EXPECT_EQ(r.requests[2].instance, 1);
      EXPECT_EQ(r.requests[3].instance, 0);
    } else {
      EXPECT_EQ(r.requests[2].instance, 0);
      EXPECT_EQ(r.requests[3].instance, 1);
    }
  }
}

}  // namespace
}  // namespace capplan::sim

namespace capplan::sim {
namespace {

// A 128-token pool (8 pages of 16) over a write-through host tier of 16
// blocks, each 1 MB loaded at 1 GB/s (1 ms a block). Request 0 leaves
// blocks 1-4 cached (and copied to the host); request 1 (100 tokens,
// unrelated) needs 7 pages, so blocks 4, 3 and 2 leave the GPU for the
// host. Request 2 (64 tokens, blocks 1-4) finds block 1 on the GPU and
// blocks 2-3 on the host (the last block is always computed): 32 tokens
// loaded in 2 ms while its 16-token prefill step takes 1 ms + 16 us
// (FakePricer). Loaded layer by layer, the step waits 2 - 1.016 ms more;
// loaded first, the whole 2 ms.
TEST(SimServingPool, HostTierHitIsLoadedBackAndTheStepWaitsForIt) {
  const std::vector<SimRequestSpec> specs = {
      {0, 0, 60, 5, false}, {1, 0, 100, 8, false}, {2, 0, 64, 2, false}};
  const std::vector<std::vector<int64_t>> ids = {
      {1, 2, 3, 4}, {7, 8, 9, 10, 11, 12, 13}, {1, 2, 3, 4}};
  auto run = [&](bool tier, bool overlap) {
    SimConfig c = CachedPool(128, ids);
    if (tier) {
      c.host_tier = {.blocks_per_rank = 16,
                     .policy = prefix_cache::HostWritePolicy::kWriteThrough,
                     .bytes_per_block = 1e6,
                     .load_bytes_per_s = 1e9,
                     .layerwise_overlap = overlap,
                     .load_min_tokens = 10};
    }
    return RunPool(c, specs);
  };
  const SimResult overlap = run(true, true), serial = run(true, false), none = run(false, false);
  EXPECT_EQ(overlap.host_hit_tokens, 32);
  EXPECT_EQ(overlap.prefix_hit_tokens, 16 + 32);
  EXPECT_EQ(overlap.host_loaded_blocks, 2);
  EXPECT_EQ(none.prefix_hit_tokens, 16);
  EXPECT_EQ(none.host_hit_tokens, 0);
  EXPECT_NEAR(overlap.busy.kv_load_seconds, 2e-3 - 1.016e-3, 1e-9);
  EXPECT_NEAR(serial.busy.kv_load_seconds, 2e-3, 1e-9);
  const auto ttft = [](const SimResult& r) {
    return r.requests[2].first_token_ns - r.requests[2].arrival_ns;
  };
  EXPECT_NEAR(ttft(serial) - ttft(overlap), 1.016e6, 2);
  EXPECT_NEAR(ttft(overlap), 2e6, 2);
  for (const auto& q : overlap.requests) EXPECT_EQ(q.status, ReqStatus::kDone);
  // The wait is request 2's alone (the only one that loaded), and part of
  // its prefill time: admitted at once, its TTFT is that step.
  EXPECT_NEAR(serial.requests[2].kv_load_ns, 2e6, 1);
  EXPECT_NEAR(overlap.requests[2].kv_load_ns, 2e6 - 1.016e6, 1);
  EXPECT_EQ(serial.requests[0].kv_load_ns, 0);
  EXPECT_EQ(serial.requests[1].kv_load_ns, 0);
  EXPECT_EQ(serial.requests[2].admit_ns, serial.requests[2].arrival_ns);
}

}  // namespace
}  // namespace capplan::sim
