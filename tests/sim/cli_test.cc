// `capplan simulate` as a user runs it: every shipped scenario (small via
// --set), outputs, exit codes for bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/data_path.h"
#include "common/json_util.h"
#include "tests/test_util/shell.h"

namespace capplan::sim {
namespace {

using test_util::Sh;

TEST(SimCli, EveryShippedScenarioRuns) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(DataPath("scenarios"))) {
    if (e.path().extension() != ".json") continue;
    ++n;
    const std::string out = test_util::TestTempPath(e.path().stem().string());
    std::string log;
    const int rc = Sh(std::string(CAPPLAN_BIN) + " simulate " + e.path().string() +
                          " --set workload.num_requests=12 --set workload.warmup_requests=2 --out " +
                          out + " --trace-out " + out + "/trace.json",
                      &log);
    ASSERT_EQ(rc, 0) << e.path() << "\n" << log;
    auto s = ReadJsonFile(out + "/summary.json");
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ((*s)["completed"].get<int64_t>() + (*s)["failed"].get<int64_t>(), 10) << e.path();
    std::ifstream csv(out + "/requests.csv");
    int lines = 0;
    for (std::string l; std::getline(csv, l);) ++lines;
    EXPECT_EQ(lines, 13) << e.path();  // header + 12 requests
    auto t = ReadJsonFile(out + "/trace.json");
    ASSERT_TRUE(t.ok());
    EXPECT_GT((*t)["traceEvents"].size(), 3u);
  }
  EXPECT_GE(n, 11);
}

// The benchmark clients' knobs as flags: each is the --set of one field.
TEST(SimCli, WorkloadShorthandFlags) {
  const std::string sc = DataPath("scenarios/kimi-k2.6-kv-fp8.json");
  std::string log;
  ASSERT_EQ(Sh(std::string(CAPPLAN_BIN) + " simulate " + sc +
                   " --concurrency 4 --num-requests 12 --input-len 512 --output-len 32"
                   " --set workload.warmup_requests=4 --json 2>/dev/null",
               &log),
            0)
      << log;
  auto j = ParseJson(log, "stdout");
  ASSERT_TRUE(j.ok()) << log;
  EXPECT_EQ((*j)["workload"]["concurrency"], 4);
  EXPECT_EQ((*j)["workload"]["num_requests"], 12);
  // The scenario's client (InferenceX's) draws each length at or below the
  // one asked for.
  const int64_t in = (*j)["total_input_tokens"], out = (*j)["total_output_tokens"];
  EXPECT_LE(in, 8 * 512);
  EXPECT_GT(in, 8 * 256);
  EXPECT_LE(out, 8 * 32);
  EXPECT_GT(out, 8 * 16);
  // A shorthand that names a field the workload kind lacks is the --set's
  // own error.
  EXPECT_EQ(Sh(std::string(CAPPLAN_BIN) + " simulate " + sc + " --request-rate 2", &log), 2);
  EXPECT_NE(log.find("/workload/request_rate"), std::string::npos) << log;
}

TEST(SimCli, JsonToStdoutAndExitCodes) {
  const std::string sc = DataPath("scenarios/kimi-k2.6-kv-fp8.json");
  std::string log;
  ASSERT_EQ(Sh(std::string(CAPPLAN_BIN) + " simulate " + sc +
                   " --set workload.num_requests=4 --set workload.warmup_requests=0 --json 2>/dev/null",
               &log),
            0)
      << log;
  auto j = ParseJson(log, "stdout");
  ASSERT_TRUE(j.ok()) << log;
  EXPECT_EQ((*j)["completed"], 4);
  // Unknown key: usage error (2) naming the path and the fix.
  EXPECT_EQ(Sh(std::string(CAPPLAN_BIN) + " simulate " + sc + " --set deployment.kv_cach=fp8", &log), 2);
  EXPECT_NE(log.find("/deployment/kv_cach"), std::string::npos) << log;
  EXPECT_NE(log.find("kv_cache"), std::string::npos) << log;
  // Impossible layout: exit 1.
  EXPECT_EQ(Sh(std::string(CAPPLAN_BIN) + " simulate " + sc + " --set deployment.gpus=4", &log), 1)
      << log;
  // Unknown flag and missing file: usage errors.
  EXPECT_EQ(Sh(std::string(CAPPLAN_BIN) + " simulate " + sc + " --jsn", &log), 2);
  EXPECT_EQ(Sh(std::string(CAPPLAN_BIN) + " simulate /nonexistent.json", &log), 2);
}

}  // namespace
}  // namespace capplan::sim
