// Extreme values in workloads and traces: each is an error naming where it
// is, or replays correctly, never a silent integer overflow.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/memory_budget.h"
#include "sim/workload/timestamp.h"
#include "sim/workload/trace_reader.h"
#include "sim/workload/workload.h"
#include "tests/sim/workload/workload_test_util.h"
#include "tests/test_util/expect_text.h"
#include "tests/test_util/temp_dir.h"

namespace capplan::sim {
namespace {

using test_util::ExpectContains;

using test_util::ExpectErrorContains;

std::string WriteTrace(const std::string& name, const std::string& text) {
  const std::string path = test_util::TestTempPath(name);
  FILE* f = std::fopen(path.c_str(), "w");
  EXPECT_NE(f, nullptr);
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

Result<Workload> AzureTrace(const std::string& path, const std::string& extra = "") {
  return LoadFromText(R"({"kind": "trace", "format": "azure_2023", "path": ")" + path + "\"" +
                      extra + "}");
}

TEST(WorkloadLimitsTest, TimestampsOutsideInt64NanosecondsAreErrors) {
  for (const char* t : {"0001-01-01 00:00:00", "9999-12-31 23:59:59", "1677-09-21 00:00:00",
                        "2262-04-12 00:00:00"}) {
    auto r = ParseCivilTimeNs(t);
    ASSERT_FALSE(r.ok()) << t << " parsed as " << *r;
    ExpectContains(r.status().message(), "range of int64 nanoseconds");
  }
  auto pre1970 = ParseCivilTimeNs("1969-12-31 23:59:59");
  ASSERT_TRUE(pre1970.ok());
  EXPECT_EQ(*pre1970, -1'000'000'000);
  auto last = ParseCivilTimeNs("2262-04-11 23:47:16");
  ASSERT_TRUE(last.ok()) << last.status().message();
  EXPECT_FALSE(ParseDecimalNs("9223372036854775808", 0).ok());
  EXPECT_FALSE(ParseDecimalNs("9223372036.854775808", 9).ok());
  auto max = ParseDecimalNs("9223372036854775807", 0);
  ASSERT_TRUE(max.ok());
  EXPECT_EQ(*max, INT64_MAX);
}

TEST(WorkloadLimitsTest, YearOneTraceIsAnErrorNotAZeroSpan) {
  const std::string path = WriteTrace("year1.csv",
                                      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                      "0001-01-01 00:00:00,10,5\n"
                                      "9999-01-01 00:00:00,10,5\n");
  ExpectErrorContains(AzureTrace(path), path + ":2: column 'TIMESTAMP'");
}

TEST(WorkloadLimitsTest, TimestampsBefore1970KeepTheirGaps) {
  const std::string path = WriteTrace("pre1970.csv",
                                      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                      "1969-12-31 23:59:57,10,5\n"
                                      "1969-12-31 23:59:58,10,5\n"
                                      "1969-12-31 23:59:59.5,10,5\n"
                                      "1970-01-01 00:00:01,10,5\n");
  auto w = AzureTrace(path);
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_EQ(w->requests.size(), 4u);
  EXPECT_EQ(w->requests[0].arrival_ns, 0);
  EXPECT_EQ(w->requests[1].arrival_ns, 1'000'000'000);
  EXPECT_EQ(w->requests[2].arrival_ns, 2'500'000'000);
  EXPECT_EQ(w->requests[3].arrival_ns, 4'000'000'000);
  // With a window that skips the first row, the first kept row is the origin.
  auto later = AzureTrace(path, R"(, "start_s": 0.5)");
  ASSERT_TRUE(later.ok()) << later.status().message();
  ASSERT_EQ(later->requests.size(), 3u);
  EXPECT_EQ(later->requests[0].arrival_ns, 0);
  EXPECT_EQ(later->requests[2].arrival_ns, 3'000'000'000);
}

TEST(WorkloadLimitsTest, TimeScaleTimesALongTraceIsAnError) {
  const std::string path = WriteTrace("long.csv",
                                      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                      "1900-01-01 00:00:00,10,5\n"
                                      "2100-01-01 00:00:00,10,5\n");
  ExpectErrorContains(AzureTrace(path, R"(, "time_scale": 1000)"),
                      "scenario.json: /workload/time_scale");
  ExpectErrorContains(AzureTrace(path), "1e8 s");
}

TEST(WorkloadLimitsTest, SpanBeyondInt64IsAnError) {
  const std::string path = WriteTrace("span.csv",
                                      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                      "1678-01-01 00:00:00,10,5\n"
                                      "2261-01-01 00:00:00,10,5\n");
  ExpectErrorContains(AzureTrace(path), "spans more than 292 years");
}

TEST(WorkloadLimitsTest, TokenCountsAreBounded) {
  auto fixed = LoadFromText(R"({"kind": "closed_loop", "concurrency": 1, "num_requests": 2,
      "input_tokens": {"dist": "fixed", "value": 10},
      "output_tokens": {"dist": "fixed", "value": 9223372036854775807}})");
  ExpectErrorContains(fixed, "/workload/output_tokens/value: must be a token count in");
  auto uniform = LoadFromText(R"({"kind": "closed_loop", "concurrency": 1, "num_requests": 2,
      "input_tokens": {"dist": "uniform", "min": 1, "max": 4611686018427387904},
      "output_tokens": {"dist": "fixed", "value": 1}})");
  EXPECT_FALSE(uniform.ok());
  // A continuous distribution is clamped to the bound.
  auto lognormal = LoadFromText(R"({"kind": "closed_loop", "concurrency": 1, "num_requests": 20,
      "input_tokens": {"dist": "lognormal", "mu": 43, "sigma": 0},
      "output_tokens": {"dist": "fixed", "value": 1}})");
  ASSERT_TRUE(lognormal.ok()) << lognormal.status().message();
  for (const RequestSpec& r : lognormal->requests) EXPECT_LE(r.input_tokens, kMaxRequestTokens);
  const std::string path = WriteTrace("huge_tokens.csv",
                                      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                      "2023-11-16 18:00:00,10,9223372036854775807\n");
  ExpectErrorContains(AzureTrace(path), "column 'GeneratedTokens'");
}

TEST(WorkloadLimitsTest, MooncakeLinesUseTheStrictParser) {
  const std::string path =
      WriteTrace("dup.jsonl", R"({"timestamp": 0, "input_length": 5, "input_length": 6, )"
                              R"("output_length": 1})"
                              "\n");
  ExpectErrorContains(ReadTraceFile("mooncake", path, {}),
                      path + ":1: /input_length: duplicate key");
  const std::string big = WriteTrace("big.jsonl", R"({"timestamp": 1e999, "input_length": 5, )"
                                                  R"("output_length": 1})"
                                                  "\n");
  EXPECT_FALSE(ReadTraceFile("mooncake", big, {}).ok());
  EXPECT_FALSE(ReadTraceFile("mooncake", "/dev/zero", {}).ok());
}

// A generated workload larger than the memory there is fails up front with
// the estimate and the way on, before allocating anything.
TEST(WorkloadLimitsTest, TooManyRequestsForTheMemoryIsOneLineUpFront) {
  SetMemoryBudgetBytes(int64_t{1} << 30);  // 1 GiB
  const std::string w = R"({"kind": "open_loop", "request_rate": 1, "num_requests": 100000000,
      "input_tokens": {"dist": "fixed", "value": 8}, "output_tokens": {"dist": "fixed", "value": 8}})";
  auto r = LoadFromText(w);
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_EQ(r.status().code(), StatusCode::kUsage);
  ExpectContains(m,
                 "/num_requests = 100000000 requests needs an estimated 9.6 GB of memory, "
                 "more than the 1.1 GB available");
  ExpectContains(m, "--yes");
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  // Within the budget, or with the check turned off (--yes), it loads.
  SetMemoryBudgetBytes(int64_t{1} << 40);
  auto small = LoadFromText(R"({"kind": "open_loop", "request_rate": 1, "num_requests": 1000,
      "input_tokens": {"dist": "fixed", "value": 8}, "output_tokens": {"dist": "fixed", "value": 8}})");
  EXPECT_TRUE(small.ok()) << small.status().message();
  SetMemoryBudgetBytes(int64_t{1} << 10);
  SetMemoryCheckDisabled(true);
  small = LoadFromText(R"({"kind": "closed_loop", "concurrency": 4, "num_requests": 1000,
      "input_tokens": {"dist": "fixed", "value": 8}, "output_tokens": {"dist": "fixed", "value": 8}})");
  EXPECT_TRUE(small.ok()) << small.status().message();
  SetMemoryCheckDisabled(false);
  SetMemoryBudgetBytes(std::nullopt);
}

}  // namespace
}  // namespace capplan::sim
