// The page-integrity predicate the CPU reference and the CUDA verify kernel
// share (kernels/attention/paged_kv.h), case by case: a match, each field
// that can differ, and the pages no live entry may name.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/attention/paged_kv.h"

namespace capplan::kernels {
namespace {

constexpr int kPages = 4;  // page 0 (poison) + 1..3

// Pages 1..3 owned by request 42 at logical pages 0..2, epoch 7.
std::vector<KvPageTag> Tags() {
  std::vector<KvPageTag> t(kPages, KvPageTag{kKvNoRequest, -1, 0});
  for (int p = 1; p < kPages; ++p) t[p] = KvPageTag{42, p - 1, 7};
  return t;
}

bool SameTag(const KvPageTag& a, const KvPageTag& b) {
  return a.request == b.request && a.logical_page == b.logical_page && a.epoch == b.epoch;
}

TEST(KvPageTag, MatchesTheTagItsEntryNames) {
  const std::vector<KvPageTag> t = Tags();
  KvPageTag found;
  EXPECT_TRUE(KvPageTagMatches(t.data(), kPages, 2, 42, 1, 7, &found));
  EXPECT_TRUE(SameTag(found, t[2]));
  // The last page of the pool is inside it.
  EXPECT_TRUE(KvPageTagMatches(t.data(), kPages, kPages - 1, 42, kPages - 2, 7, &found));
}

TEST(KvPageTag, EachDifferingFieldIsAMismatchReportingTheTagRead) {
  const std::vector<KvPageTag> t = Tags();
  KvPageTag found;
  EXPECT_FALSE(KvPageTagMatches(t.data(), kPages, 2, 43, 1, 7, &found));  // another request
  EXPECT_TRUE(SameTag(found, t[2]));
  EXPECT_FALSE(KvPageTagMatches(t.data(), kPages, 2, 42, 2, 7, &found));  // another logical page
  EXPECT_TRUE(SameTag(found, t[2]));
  EXPECT_FALSE(KvPageTagMatches(t.data(), kPages, 2, 42, 1, 8, &found));  // a stale epoch
  EXPECT_TRUE(SameTag(found, t[2]));
}

// The poison page and pages outside the pool never match, even where the
// tag stored there would, and read no tag: `found` says "no request".
TEST(KvPageTag, PagesOutsideThePoolNeverMatchAndReadNoTag) {
  std::vector<KvPageTag> t = Tags();
  t[0] = KvPageTag{42, 0, 7};  // a poison page stamped by mistake
  const KvPageTag none{kKvNoRequest, -1, 0};
  for (int32_t page : {kKvPoisonPage, -1, kPages, kPages + 1, std::numeric_limits<int32_t>::min(),
                       std::numeric_limits<int32_t>::max()}) {
    KvPageTag found{1, 2, 3};
    EXPECT_FALSE(KvPageTagMatches(t.data(), kPages, page, 42, 0, 7, &found)) << page;
    EXPECT_TRUE(SameTag(found, none)) << page;
  }
}

TEST(KvPageTag, ThePoolIsPastThePoisonPageAndBelowItsSize) {
  EXPECT_FALSE(KvPageInPool(kKvPoisonPage, kPages));
  EXPECT_FALSE(KvPageInPool(-1, kPages));
  EXPECT_TRUE(KvPageInPool(1, kPages));
  EXPECT_TRUE(KvPageInPool(kPages - 1, kPages));
  EXPECT_FALSE(KvPageInPool(kPages, kPages));
  // A pool of the poison page alone holds no page.
  EXPECT_FALSE(KvPageInPool(1, 1));
}

// An unowned page (a fresh cache's tag) matches no live entry.
TEST(KvPageTag, AnUnownedPageMatchesNoEntry) {
  std::vector<KvPageTag> t = Tags();
  t[3] = KvPageTag{kKvNoRequest, -1, 0};
  KvPageTag found;
  EXPECT_FALSE(KvPageTagMatches(t.data(), kPages, 3, 42, 2, 7, &found));
  EXPECT_EQ(found.request, kKvNoRequest);
}

}  // namespace
}  // namespace capplan::kernels
