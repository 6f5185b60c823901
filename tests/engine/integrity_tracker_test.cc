#include "engine/integrity_tracker.h"

#include <set>

#include <gtest/gtest.h>

#include "engine/fault_injector.h"

namespace capplan::engine {
namespace {

// Two requests with `tokens` tokens each, every written page stamped as the
// append path would.
class TrackerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int64_t id : {10, 11}) {
      ASSERT_TRUE(kv_.AddRequest(id).ok());
      ASSERT_TRUE(kv_.Reserve(id, kTokens).ok());
      Stamp(id);
    }
  }
  void Stamp(int64_t id) {
    const auto& t = kv_.PageTable(id);
    for (size_t j = 0; j < t.size(); ++j) StampPage(tracker_.tags(), id, j, t[j]);
  }
  std::vector<VerifyItem> Batch() const { return {{10, kTokens}, {11, kTokens}}; }

  static constexpr int64_t kTokens = 12;  // 3 pages of 4
  KvPageManager kv_{16, 4};
  VerifyingTracker tracker_{16};
};

TEST_F(TrackerTest, CleanBatchHasNoViolations) {
  EXPECT_TRUE(tracker_.Verify(Batch(), kv_).empty());
}

TEST_F(TrackerTest, ReservedButUnwrittenPagesPassAfterReuse) {
  // Free request 10, reuse its pages for a new request that has not written.
  ASSERT_TRUE(kv_.Release(10).ok());
  kv_.EndStep();
  ASSERT_TRUE(kv_.AddRequest(12).ok());
  ASSERT_TRUE(kv_.Reserve(12, 40).ok());  // takes fresh and reused pages
  EXPECT_TRUE(tracker_.Verify({{11, kTokens}, {12, 0}}, kv_).empty());
}

TEST_F(TrackerTest, MisMapIsCaughtForThatRequestOnly) {
  const PageRef other = kv_.PageTable(11)[1];
  ASSERT_TRUE(kv_.InjectRemap(10, 2, other).ok());
  const auto v = tracker_.Verify(Batch(), kv_);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].request, 10);
  EXPECT_NE(v[0].message.find("request 10 logical page 2"), std::string::npos) << v[0].message;
  EXPECT_NE(v[0].message.find("request 11, logical page 1"), std::string::npos) << v[0].message;
}

TEST_F(TrackerTest, MapToPoisonPageIsCaught) {
  ASSERT_TRUE(kv_.InjectRemap(11, 0, PageRef{kPoisonPage, 0}).ok());
  const auto v = tracker_.Verify(Batch(), kv_);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].request, 11);
  EXPECT_NE(v[0].message.find("poison"), std::string::npos);
}

TEST_F(TrackerTest, SwapFailsBothRequests) {
  const PageRef a = kv_.PageTable(10)[0], b = kv_.PageTable(11)[2];
  ASSERT_TRUE(kv_.InjectRemap(10, 0, b).ok());
  ASSERT_TRUE(kv_.InjectRemap(11, 2, a).ok());
  const auto v = tracker_.Verify(Batch(), kv_);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].request, 10);
  EXPECT_EQ(v[1].request, 11);
}

TEST_F(TrackerTest, StaleReuseNamesTheVictimNotTheNewOwner) {
  ASSERT_TRUE(kv_.InjectStaleReuse(10, 1, 11).ok());
  const auto v = tracker_.Verify(Batch(), kv_);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].request, 10);
  EXPECT_NE(v[0].message.find("without bumping its epoch"), std::string::npos) << v[0].message;
}

TEST_F(TrackerTest, EpochDistinguishesAReincarnatedPage) {
  // Same request id, same logical page, same physical page, older epoch: a
  // stale page-table entry after the page was freed and reallocated.
  PageRef stale = kv_.PageTable(10)[0];
  stale.epoch -= 1;
  ASSERT_TRUE(kv_.InjectRemap(10, 0, stale).ok());
  const auto v = tracker_.Verify(Batch(), kv_);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].request, 10);
}

TEST(NoopTrackerTest, StampsNothingAndNeverFlags) {
  KvPageManager kv(8, 4);
  NoopTracker t;
  EXPECT_EQ(t.tags(), nullptr);
  ASSERT_TRUE(kv.AddRequest(1).ok());
  ASSERT_TRUE(kv.Reserve(1, 8).ok());
  ASSERT_TRUE(kv.InjectRemap(1, 0, PageRef{kPoisonPage, 0}).ok());
  EXPECT_TRUE(t.Verify({{1, 8}}, kv).empty());
}

TEST(MakeIntegrityTrackerTest, KnownAndUnknownNames) {
  auto none = MakeIntegrityTracker("none", 4);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)->name(), "none");
  auto verify = MakeIntegrityTracker("verify", 4);
  ASSERT_TRUE(verify.ok());
  EXPECT_NE((*verify)->tags(), nullptr);
  auto bad = MakeIntegrityTracker("verfy", 4);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kUsage);
  EXPECT_NE(bad.status().message().find("did you mean 'verify'"), std::string::npos)
      << bad.status().message();
}

TEST(FaultInjectorTest, EveryKindIsCaughtOnAStampedBatch) {
  for (FaultKind kind : AllFaultKinds()) {
    KvPageManager kv(32, 4);
    VerifyingTracker tracker(32);
    std::vector<VerifyItem> batch;
    for (int64_t id = 0; id < 4; ++id) {
      ASSERT_TRUE(kv.AddRequest(id).ok());
      ASSERT_TRUE(kv.Reserve(id, 10).ok());
      const auto& t = kv.PageTable(id);
      for (size_t j = 0; j < t.size(); ++j) StampPage(tracker.tags(), id, j, t[j]);
      batch.push_back({id, 10});
    }
    uint64_t rng = 42;
    auto f = InjectFault(kind, &kv, batch, {}, &rng);
    ASSERT_TRUE(f.ok()) << f.status().message();
    const auto v = tracker.Verify(batch, kv);
    std::set<int64_t> flagged;
    for (const auto& x : v) flagged.insert(x.request);
    EXPECT_EQ(flagged, std::set<int64_t>(f->affected.begin(), f->affected.end()))
        << FaultKindName(kind) << ": " << f->description;
  }
}

}  // namespace
}  // namespace capplan::engine
