// Hostile inputs through the real binary: each gives one line on stderr and
// the documented exit code (2 for bad input, 1 for a configuration that
// cannot work), never a crash, a hang or a multi-line echo.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "common/data_path.h"
#include "tests/test_util/shell.h"

namespace capplan::sim {
namespace {

using test_util::Sh;

const std::string kSmall = " --set workload.num_requests=4 --set workload.warmup_requests=0";

std::string Simulate(const std::string& args) {
  return std::string(CAPPLAN_BIN) + " simulate " + DataPath("scenarios/llama-3.1-70b-tp4.json") +
         kSmall + " " + args + " --json";
}

// rc and the output, which must be exactly one line.
int RunOneLine(const std::string& cmd, std::string* out) {
  // `timeout` turns a hang (a FIFO read) into a failure instead of a stuck test.
  const int rc = Sh("timeout 60 " + cmd, out);
  EXPECT_EQ(std::count(out->begin(), out->end(), '\n'), 1) << *out;
  EXPECT_EQ(out->rfind("capplan: error: ", 0), 0u) << *out;
  return rc;
}

TEST(CliLimits, NumberBeyondDoubleInSetIsUsageError) {
  std::string out;
  EXPECT_EQ(
      RunOneLine(Simulate("--set deployment.mem_fraction_static=1" + std::string(50, '1') + "e300"),
                 &out),
      2);
  EXPECT_NE(out.find("out of range"), std::string::npos) << out;
  EXPECT_EQ(RunOneLine(Simulate("--set deployment.mem_fraction_static=1e309"), &out), 2);
}

TEST(CliLimits, LongModelNameIsUnknownModelNotFilesystemError) {
  std::string out;
  EXPECT_EQ(RunOneLine(Simulate("--set model=" + std::string(300, 'k')), &out), 2);
  EXPECT_NE(out.find("unknown model 'kkkk"), std::string::npos) << out;
  EXPECT_NE(out.find("...'"), std::string::npos) << out;
  EXPECT_LT(out.size(), 1000u);
  EXPECT_EQ(RunOneLine(Simulate("--set hardware=" + std::string(300, 'h')), &out), 2);
  EXPECT_NE(out.find("unknown hardware profile"), std::string::npos) << out;
}

TEST(CliLimits, NewlineInValueIsEscaped) {
  std::string out;
  EXPECT_EQ(RunOneLine(Simulate("--set deployment.kv_cache=$'bf16\\n'"), &out), 2);
  EXPECT_NE(out.find("bf16\\n"), std::string::npos) << out;
}

TEST(CliLimits, DeepNestingIsUsageError) {
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "{\"a\":";
  deep += "1" + std::string(5000, '}');
  const std::string path = test_util::WriteTemp("deep_set.txt", deep);
  std::string out;
  EXPECT_EQ(RunOneLine(Simulate("--set \"workload.format=$(cat " + path + ")\""), &out), 2);
  EXPECT_NE(out.find("nested deeper than 512"), std::string::npos) << out;
}

TEST(CliLimits, SpecialFilesAsInputsAreRefusedAtOnce) {
  std::string out;
  EXPECT_EQ(RunOneLine(std::string(CAPPLAN_BIN) + " simulate /dev/zero", &out), 2);
  EXPECT_NE(out.find("not a regular file"), std::string::npos) << out;
  const std::string fifo = test_util::TestTempPath("cli_limits_fifo.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(RunOneLine(std::string(CAPPLAN_BIN) + " simulate " + fifo, &out), 2);
  EXPECT_EQ(RunOneLine(std::string(CAPPLAN_BIN) + " simulate " + test_util::TestTempDir(), &out), 2);
  EXPECT_NE(out.find("is a directory"), std::string::npos) << out;
}

TEST(CliLimits, HugeOutputLengthIsRangeError) {
  std::string out;
  EXPECT_EQ(RunOneLine(Simulate("--set 'workload.output_tokens={\"dist\":\"fixed\",\"value\":"
                                "9223372036854775807}'"),
                       &out),
            2);
  EXPECT_NE(out.find("/workload/output_tokens/value: must be a token count in"), std::string::npos)
      << out;
}

TEST(CliLimits, EveryRequestFailingIsAnInvalidConfigNotAFreeRun) {
  std::string out;
  // A KV pool of about 66K tokens per rank; every prompt is 120K tokens.
  EXPECT_EQ(RunOneLine(Simulate("--set deployment.mem_fraction_static=0.27 --set "
                                "'workload.input_tokens={\"dist\":\"fixed\",\"value\":120000}'"),
                       &out),
            1);
  EXPECT_NE(out.find("/workload: all 4 requests failed"), std::string::npos) << out;
  EXPECT_EQ(out.find("$0.000"), std::string::npos) << out;
}

TEST(CliLimits, TraceOutToADeviceIsRefusedAndTheDeviceKept) {
  std::string out;
  EXPECT_EQ(RunOneLine(Simulate("--trace-out /dev/null"), &out), 1);
  EXPECT_NE(out.find("not a regular file"), std::string::npos) << out;
  struct stat sb {};
  ASSERT_EQ(::stat("/dev/null", &sb), 0);
  EXPECT_TRUE(S_ISCHR(sb.st_mode));
}

}  // namespace
}  // namespace capplan::sim
