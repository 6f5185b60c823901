// The report tests' inputs: summaries under tests/report/data
// (REPORT_TEST_DATA), loaded and analyzed, failing the test on an error.
#ifndef CAPPLAN_TESTS_REPORT_REPORT_TEST_DATA_H_
#define CAPPLAN_TESTS_REPORT_REPORT_TEST_DATA_H_

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "report/analysis.h"
#include "report/summary.h"

namespace capplan::report::test_data {

inline const std::string kData = REPORT_TEST_DATA;

// Kimi K2.6 with BF16 and FP8 KV, each at concurrency 16 and 64.
inline std::vector<std::string> KimiFiles() {
  return {kData + "/kimi_bf16_kv_c16.json", kData + "/kimi_bf16_kv_c64.json",
          kData + "/kimi_fp8_kv_c16.json", kData + "/kimi_fp8_kv_c64.json"};
}

inline std::vector<Summary> Loaded(const std::vector<std::string>& files) {
  auto r = LoadResults(files);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : std::vector<Summary>{};
}

inline Analysis Analyzed(std::vector<Summary> results, ReportOptions options = {}) {
  auto a = Analyze(std::move(results), options);
  EXPECT_TRUE(a.ok()) << a.status().message();
  return std::move(a).value();
}

// How many times `needle` occurs in `hay`, overlaps included.
inline int Count(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace capplan::report::test_data

#endif  // CAPPLAN_TESTS_REPORT_REPORT_TEST_DATA_H_
