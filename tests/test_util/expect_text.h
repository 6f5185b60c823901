// Checks on text the tests share: a message or an output holds a phrase, or
// a call failed with a message that does. Header-only, like shell.h.
#ifndef CAPPLAN_TESTS_TEST_UTIL_EXPECT_TEXT_H_
#define CAPPLAN_TESTS_TEST_UTIL_EXPECT_TEXT_H_

#include <gtest/gtest.h>

#include <string>

#include "common/status.h"

namespace capplan::test_util {

// `text` holds `needle`; a failure prints the whole text.
inline void ExpectContains(const std::string& text, const std::string& needle) {
  EXPECT_NE(text.find(needle), std::string::npos) << "no '" << needle << "' in: " << text;
}

// `r` is an error whose message holds `needle`.
template <class T>
void ExpectErrorContains(const Result<T>& r, const std::string& needle) {
  ASSERT_FALSE(r.ok()) << "expected an error holding '" << needle << "'";
  ExpectContains(r.status().message(), needle);
}

// `r` is an error of kind `code` whose message holds `needle`.
template <class T>
void ExpectErrorContains(const Result<T>& r, StatusCode code, const std::string& needle) {
  ASSERT_FALSE(r.ok()) << "expected an error holding '" << needle << "'";
  EXPECT_EQ(r.status().code(), code) << r.status().message();
  ExpectContains(r.status().message(), needle);
}

}  // namespace capplan::test_util

#endif  // CAPPLAN_TESTS_TEST_UTIL_EXPECT_TEXT_H_
