// AdviseHugePages is a hint: it must leave a buffer's contents and every
// other property of the vector as they were, whatever the kernel does.
#include "common/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace capplan::common {
namespace {

TEST(HugePages, ReserveGivesTheRoomAndKeepsWhatIsWritten) {
  std::vector<int64_t> v;
  const size_t n = (size_t{9} << 20) / sizeof(int64_t) + 3;  // 9 MiB and a bit: unaligned ends
  ReserveHugePages(&v, n);
  EXPECT_TRUE(v.empty());
  ASSERT_GE(v.capacity(), n);
  const int64_t* data = v.data();
  v.resize(n);
  std::iota(v.begin(), v.end(), int64_t{-5});
  EXPECT_EQ(v.data(), data);  // filled within the advised room, no reallocation
  EXPECT_EQ(v.front(), -5);
  EXPECT_EQ(v[n / 2], static_cast<int64_t>(n / 2) - 5);
  EXPECT_EQ(v.back(), static_cast<int64_t>(n) - 6);
}

TEST(HugePages, AdviceOnFilledSmallOrNoBufferChangesNothing) {
  std::vector<uint8_t> filled(size_t{5} << 20, 7);
  AdviseHugePages(filled.data(), filled.size());
  EXPECT_EQ(std::accumulate(filled.begin(), filled.end(), uint64_t{0}), uint64_t{7} * filled.size());
  std::vector<int> small = {1, 2, 3};
  AdviseHugePages(small.data(), small.size() * sizeof(int));
  EXPECT_EQ(small, (std::vector<int>{1, 2, 3}));
  AdviseHugePages(nullptr, size_t{1} << 30);
  std::vector<double> none;
  ReserveHugePages(&none, 0);
  EXPECT_TRUE(none.empty());
}

}  // namespace
}  // namespace capplan::common
