// One entry function per input format capplan reads from a user. The
// libFuzzer targets (fuzz_target.cc) and the regression replay test
// (regression_test.cc) call the same functions, so an input that once
// crashed a fuzzer is replayed by every build.
//
// An entry must return normally for any input: an accepted input or a
// one-line error. It aborts (a fuzzer crash) when a reader returns an error
// whose message spans lines, runs past kMaxErrorBytes or is not valid UTF-8;
// any exception,
// sanitizer report or signal is a crash by itself.
#ifndef CAPPLAN_TESTS_FUZZ_FUZZ_ENTRIES_H_
#define CAPPLAN_TESTS_FUZZ_FUZZ_ENTRIES_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace capplan::fuzz {

// An error longer than this echoes too much of its input.
inline constexpr size_t kMaxErrorBytes = 4096;

struct Target {
  const char* name;  // fuzz_<name> binary, tests/fuzz/regressions/<name>/
  void (*run)(std::string_view input);
};

const std::vector<Target>& Targets();
// nullptr when unknown.
const Target* FindTarget(std::string_view name);

// Splits "head\n--set a\n--set b" into {"head", "a", "b"} on `marker`
// ("\n--set "); at most `max_parts` parts (the rest stays in the last).
std::vector<std::string> SplitOn(std::string_view input, std::string_view marker,
                                 size_t max_parts);

}  // namespace capplan::fuzz

#endif  // CAPPLAN_TESTS_FUZZ_FUZZ_ENTRIES_H_
