// Scratch files for tests. ctest runs every test case as its own process and
// several at once, so a fixed name in a shared folder lets one test read
// another's half-written file. Every test therefore writes under a directory
// of its own: made with mkdtemp (capplan_<pid>_XXXXXX: short, since tests
// print and measure paths inside it), and removed when the test ends (a
// gtest listener). With CAPPLAN_KEEP_TEST_TMP=1
// in the environment a failed test keeps it and says where, so its files can
// be looked at. Header-only, like shell.h.
#ifndef CAPPLAN_TESTS_TEST_UTIL_TEMP_DIR_H_
#define CAPPLAN_TESTS_TEST_UTIL_TEMP_DIR_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

namespace capplan::test_util {
namespace temp_dir_internal {

struct State {
  std::mutex mu;
  std::string test_dir;     // the running test's directory ("" until asked for)
  std::string process_dir;  // for callers outside a test (suite set-up, fuzz entries)
  bool listener_added = false;
};

inline State& GetState() {
  static State* s = new State;  // never destroyed: a listener may run at exit
  return *s;
}

inline void RemoveTree(const std::string& dir) {
  std::error_code ec;  // best effort: a leftover scratch folder fails no test
  std::filesystem::remove_all(dir, ec);
}

// Removes a test's directory when the test ends (after its fixture's TearDown
// and destructor), so the next test in the same process starts empty.
class Cleaner : public ::testing::EmptyTestEventListener {
 public:
  void OnTestEnd(const ::testing::TestInfo& info) override {
    State& s = GetState();
    std::string dir;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      dir.swap(s.test_dir);
    }
    if (dir.empty()) return;
    const char* keep = std::getenv("CAPPLAN_KEEP_TEST_TMP");
    if (keep != nullptr && std::string(keep) == "1" && info.result() != nullptr &&
        info.result()->Failed()) {
      fprintf(stderr, "test_util: %s.%s failed; its scratch files are kept in %s\n",
              info.test_suite_name(), info.name(), dir.c_str());
      return;
    }
    RemoveTree(dir);
  }
};

// The process-wide directory lives until exit; removing it then keeps /tmp clean.
inline void RemoveProcessDir() {
  State& s = GetState();
  if (!s.process_dir.empty()) RemoveTree(s.process_dir);
}

// mkdtemp under gtest's TempDir() (TEST_TMPDIR or /tmp); aborts the test
// binary on failure, since no test can run without its scratch space.
inline std::string MakeDir() {
  std::filesystem::path base(::testing::TempDir());
  const std::string tmpl =
      (base / ("capplan_" + std::to_string(::getpid()) + "_XXXXXX")).string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    fprintf(stderr, "test_util: mkdtemp(%s) failed\n", tmpl.c_str());
    std::abort();
  }
  return std::string(buf.data());
}

}  // namespace temp_dir_internal

// The running test's own scratch directory (no trailing '/'): created on
// first use, the same for the rest of the test, removed when the test ends.
// Outside a test (SetUpTestSuite, a fuzz target) it is one directory per
// process, removed at exit.
inline std::string TestTempDir() {
  namespace in = temp_dir_internal;
  in::State& s = in::GetState();
  const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
  std::lock_guard<std::mutex> lock(s.mu);
  if (t == nullptr) {
    if (s.process_dir.empty()) {
      s.process_dir = in::MakeDir();
      std::atexit(in::RemoveProcessDir);
    }
    return s.process_dir;
  }
  if (s.test_dir.empty()) {
    if (!s.listener_added) {
      // Appended from inside a test body, where gtest is not walking its
      // listeners; the listener then sees this test's end and every later one.
      ::testing::UnitTest::GetInstance()->listeners().Append(new in::Cleaner);
      s.listener_added = true;
    }
    s.test_dir = in::MakeDir();
  }
  return s.test_dir;
}

// `name` in TestTempDir(); creates nothing (the caller writes the file or folder).
inline std::string TestTempPath(const std::string& name) { return TestTempDir() + "/" + name; }

}  // namespace capplan::test_util

#endif  // CAPPLAN_TESTS_TEST_UTIL_TEMP_DIR_H_
