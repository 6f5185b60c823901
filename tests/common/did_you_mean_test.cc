#include "common/did_you_mean.h"

#include <gtest/gtest.h>

namespace capplan {
namespace {

TEST(DidYouMean, EditDistance) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(EditDistance("TP", "tp"), 0);
}

TEST(DidYouMean, SuggestsCloseName) {
  EXPECT_EQ(ClosestMatch("kimi-k2.5", {"kimi-k2.6", "glm-5.2"}), "kimi-k2.6");
  EXPECT_EQ(DidYouMean("concurency", {"concurrency", "seed"}), "; did you mean 'concurrency'?");
}

TEST(DidYouMean, ListsKnownWhenNothingIsClose) {
  EXPECT_EQ(DidYouMean("zzzzzzzz", {"a", "b"}), "; known: a, b");
}

}  // namespace
}  // namespace capplan
