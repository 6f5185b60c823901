// The PD hooks of a ServingPool (sim/serving_pool.h) against a fake pricer:
// a decode pool's prealloc queue reserves FIFO without skipping, reserved
// requests are admitted with their pages, and a prefill pool holds computed
// prompts until released. A tiny driver here plays the other pool.
#include "sim/serving_pool.h"

#include <gtest/gtest.h>

#include "tests/sim/fake_pricer.h"

namespace capplan {
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
  auto pool = ServingPool::Create(1, Pool(Phase::kDecodeOnly, 1000), specs, p, &echo.q,
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
  auto pool = ServingPool::Create(1, Pool(Phase::kDecodeOnly, 1000), specs, p, &echo.q,
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
  auto pool = ServingPool::Create(0, Pool(Phase::kPrefillOnly, 832), specs, p, &echo.q,
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
}  // namespace capplan
