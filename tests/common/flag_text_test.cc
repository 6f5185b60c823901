// Inputs found by the fuzzers (tests/fuzz/regressions/): flag values that are
// not UTF-8 text, and input-derived suggestions with control characters, give
// one-line errors instead of an exception from nlohmann::json's dump.
#include <gtest/gtest.h>

#include "common/did_you_mean.h"
#include "common/json_util.h"
#include "common/utf8.h"

namespace capplan {
namespace {

TEST(FlagText, Utf8IsCheckedStrictly) {
  EXPECT_TRUE(IsUtf8(""));
  EXPECT_TRUE(IsUtf8("fp8"));
  EXPECT_TRUE(IsUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // e-acute, euro, emoji
  EXPECT_FALSE(IsUtf8("\xf4"));                                  // truncated
  EXPECT_FALSE(IsUtf8("a\x8c"));                                 // stray continuation
  EXPECT_FALSE(IsUtf8("\xc0\xaf"));                              // overlong '/'
  EXPECT_FALSE(IsUtf8("\xed\xa0\x80"));                          // surrogate
  EXPECT_FALSE(IsUtf8("\xf4\x90\x80\x80"));                      // past U+10FFFF
}

TEST(FlagText, NonUtf8FlagValuesAndPathsAreOneLineErrors) {
  auto v = ParseFlagValue("ab\xf4\n", "--set deployment.kv_cache");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(),
            "--set deployment.kv_cache: 'ab\\xf4\\n' is not valid UTF-8 text");
  nlohmann::json doc = nlohmann::json::object();
  const Status st = SetDotted(&doc, "a.\xff", "1", "--set");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().find('\n'), std::string::npos);
  EXPECT_TRUE(doc.empty());
  // Text that is not JSON but is UTF-8 stays a string.
  auto s = ParseFlagValue("\xc3\xa9t\xc3\xa9", "--set x");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->dump(), "\"\xc3\xa9t\xc3\xa9\"");
}

TEST(FlagText, SuggestionsFromInputsAreEscaped) {
  EXPECT_EQ(DidYouMean("Model", {"\r@odel", "x"}), "; did you mean '\\r@odel'?");
  const std::string known = DidYouMean("zzzzzzzz", {std::string(500, '\x0c'), "b"});
  EXPECT_EQ(known.find('\x0c'), std::string::npos);
  EXPECT_LT(known.size(), 300u);
}

}  // namespace
}  // namespace capplan
