#include "engine/kv_page_manager.h"

#include <set>

#include <gtest/gtest.h>

namespace capplan::engine {
namespace {

TEST(KvPageManagerTest, PoisonPageIsNeverAllocated) {
  KvPageManager kv(/*num_pages=*/5, /*page_size=*/4);
  EXPECT_EQ(kv.usable_pages(), 4);
  ASSERT_TRUE(kv.AddRequest(7).ok());
  ASSERT_TRUE(kv.Reserve(7, 16).ok());  // 4 pages: all usable ones
  std::set<int32_t> seen;
  for (const PageRef& r : kv.PageTable(7)) {
    EXPECT_NE(r.physical, kPoisonPage);
    EXPECT_EQ(kv.Owner(r.physical), 7);
    seen.insert(r.physical);
  }
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_EQ(kv.free_pages(), 0);
}

TEST(KvPageManagerTest, ReserveGrowsOnlyAtPageBoundaries) {
  KvPageManager kv(10, 4);
  ASSERT_TRUE(kv.AddRequest(1).ok());
  ASSERT_TRUE(kv.Reserve(1, 1).ok());
  EXPECT_EQ(kv.PageTable(1).size(), 1u);
  ASSERT_TRUE(kv.Reserve(1, 4).ok());
  EXPECT_EQ(kv.PageTable(1).size(), 1u);
  ASSERT_TRUE(kv.Reserve(1, 5).ok());
  EXPECT_EQ(kv.PageTable(1).size(), 2u);
  EXPECT_EQ(kv.free_pages(), 7);
}

TEST(KvPageManagerTest, OutOfPagesIsAnErrorAndAllocatesNothing) {
  KvPageManager kv(4, 2);  // 3 usable pages
  ASSERT_TRUE(kv.AddRequest(1).ok());
  const Status st = kv.Reserve(1, 8);  // needs 4
  EXPECT_EQ(st.code(), StatusCode::kInvalidConfig);
  EXPECT_NE(st.message().find("needs 4 more pages but 3 are free"), std::string::npos);
  EXPECT_TRUE(kv.PageTable(1).empty());
  EXPECT_EQ(kv.free_pages(), 3);
}

TEST(KvPageManagerTest, FreedPagesWaitForTheStepFenceAndComeBackWithNewEpoch) {
  KvPageManager kv(3, 4);  // 2 usable
  ASSERT_TRUE(kv.AddRequest(1).ok());
  ASSERT_TRUE(kv.Reserve(1, 8).ok());
  const std::vector<PageRef> old = kv.PageTable(1);
  ASSERT_TRUE(kv.Release(1).ok());
  EXPECT_FALSE(kv.HasRequest(1));
  // Not reusable within the step that freed them.
  EXPECT_EQ(kv.free_pages(), 0);
  EXPECT_EQ(kv.deferred_pages(), 2);
  ASSERT_TRUE(kv.AddRequest(2).ok());
  EXPECT_FALSE(kv.Reserve(2, 1).ok());
  kv.EndStep();
  EXPECT_EQ(kv.free_pages(), 2);
  ASSERT_TRUE(kv.Reserve(2, 8).ok());
  for (const PageRef& r : kv.PageTable(2)) {
    bool matched = false;
    for (const PageRef& o : old) {
      if (o.physical == r.physical) {
        matched = true;
        EXPECT_EQ(r.epoch, o.epoch + 1) << "every reuse bumps the epoch";
      }
    }
    EXPECT_TRUE(matched);
  }
}

TEST(KvPageManagerTest, DuplicateAndUnknownRequestsAreInternalErrors) {
  KvPageManager kv(4, 4);
  ASSERT_TRUE(kv.AddRequest(3).ok());
  EXPECT_EQ(kv.AddRequest(3).code(), StatusCode::kInternal);
  EXPECT_EQ(kv.Reserve(9, 1).code(), StatusCode::kInternal);
  EXPECT_EQ(kv.Release(9).code(), StatusCode::kInternal);
}

TEST(KvPageManagerTest, StaleReuseMovesOwnershipButKeepsEpoch) {
  KvPageManager kv(8, 4);
  ASSERT_TRUE(kv.AddRequest(1).ok());
  ASSERT_TRUE(kv.AddRequest(2).ok());
  ASSERT_TRUE(kv.Reserve(1, 8).ok());
  ASSERT_TRUE(kv.Reserve(2, 4).ok());
  const PageRef stolen = kv.PageTable(1)[0];
  ASSERT_TRUE(kv.InjectStaleReuse(1, 0, 2).ok());
  EXPECT_EQ(kv.Owner(stolen.physical), 2);
  EXPECT_EQ(kv.PageTable(2).back(), stolen);  // same epoch: the bug
  EXPECT_EQ(kv.PageTable(1)[0], stolen);      // victim still maps it
  // Releasing the victim must not free the page it no longer owns.
  ASSERT_TRUE(kv.Release(1).ok());
  kv.EndStep();
  EXPECT_EQ(kv.Owner(stolen.physical), 2);
  // 7 usable; request 2 holds 2 (its own + the stolen one); the victim's
  // other page came back.
  EXPECT_EQ(kv.free_pages(), 5);
}

}  // namespace
}  // namespace capplan::engine
