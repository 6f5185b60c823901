// Helpers the tests share: run a command as a user would (stdout and stderr
// together, exit status) and write a scratch file in the test's own
// directory (temp_dir.h). Header-only, so any test binary can use it without
// another library.
#ifndef CAPPLAN_TESTS_TEST_UTIL_SHELL_H_
#define CAPPLAN_TESTS_TEST_UTIL_SHELL_H_

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/test_util/temp_dir.h"

namespace capplan::test_util {

// Runs `cmd` through the shell with stderr merged into stdout; returns the
// exit status (-1 when the shell could not start or the command was killed).
inline int Sh(const std::string& cmd, std::string* out = nullptr) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) s.append(buf, n);
  const int st = pclose(p);
  if (out != nullptr) *out = s;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// Writes `text` to `name` in the running test's scratch directory
// (TestTempDir()) and returns the path.
inline std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = TestTempPath(name);
  std::ofstream(path) << text;
  return path;
}

// A whole file as text ("" when it cannot be read).
inline std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace capplan::test_util

#endif  // CAPPLAN_TESTS_TEST_UTIL_SHELL_H_
