// Replays every input kept under tests/fuzz/regressions/<target>/ (inputs
// that once crashed a fuzzer) and the hand-written seeds under
// tests/fuzz/seeds/<target>/ through the same entry functions the fuzzers
// call. A crash, an exception or an error that is not one line fails here
// in every build, sanitizers or not.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fuzz/fuzz_entries.h"

namespace capplan::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> FilesUnder(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename() != "README.md") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class FuzzRegression : public ::testing::TestWithParam<Target> {};

TEST_P(FuzzRegression, KeptInputsGiveOneLineErrorsOrSucceed) {
  const Target& t = GetParam();
  int replayed = 0;
  for (const char* kind : {"regressions", "seeds"}) {
    for (const fs::path& f : FilesUnder(fs::path(CAPPLAN_FUZZ_DIR) / kind / t.name)) {
      SCOPED_TRACE(f.string());
      t.run(Slurp(f));  // aborts on a violation, naming the input
      ++replayed;
    }
  }
  // Every target has at least one hand-written seed, so a renamed folder
  // cannot make this test pass vacuously.
  EXPECT_GT(replayed, 0) << "no inputs for fuzz target " << t.name;
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzRegression, ::testing::ValuesIn(Targets()),
                         [](const ::testing::TestParamInfo<Target>& info) {
                           return std::string(info.param.name);
                         });

// The CMake list (which binaries exist) and the entry table agree.
TEST(FuzzTargets, CMakeListMatchesTheEntryTable) {
  std::vector<std::string> listed;
  std::stringstream in(CAPPLAN_FUZZ_TARGET_LIST);
  for (std::string name; std::getline(in, name, ',');) listed.push_back(name);
  std::vector<std::string> entries;
  for (const Target& t : Targets()) entries.push_back(t.name);
  EXPECT_EQ(listed, entries);
}

TEST(FuzzSplitOn, SplitsOnTheMarkerUpToTheLimit) {
  EXPECT_EQ(SplitOn("a\n--set b\n--set c", "\n--set ", 9),
            (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(SplitOn("a\n--set b\n--set c", "\n--set ", 2),
            (std::vector<std::string>{"a", "b\n--set c"}));
  EXPECT_EQ(SplitOn("", "\n", 4), (std::vector<std::string>{""}));
}

}  // namespace
}  // namespace capplan::fuzz
