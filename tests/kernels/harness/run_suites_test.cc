// The sweep driver on the CPU: case order (priority, then round-robin across
// suites), failed cases recorded as check "error" while the sweep goes on,
// the file rewritten after every case, and a sticky device error ending the
// run with what was measured kept.
#include "kernels/harness/run_suites.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/json_util.h"
#include "kernels/harness/measurement.h"
#include "kernels/harness/suite.h"
#include "tests/test_util/temp_dir.h"

namespace capplan::kernels {
namespace {

using Order = std::vector<std::pair<size_t, size_t>>;

SuiteCase Case(const std::string& label, int priority = kSweepPriority,
               std::function<Status(const SuiteOptions&, MeasurementSink*)> run = nullptr) {
  SuiteCase c;
  c.label = label;
  c.kernel = "k_" + label;
  c.op_class = "dense_gemm";
  c.priority = priority;
  c.run = run ? std::move(run) : [label](const SuiteOptions&, MeasurementSink* sink) {
    MeasurementRecord r;
    r.kernel = "k_" + label;
    r.op_class = "dense_gemm";
    r.dtype = "bf16";
    r.shape = {{"m", 1}};
    r.timing = {10.0, 9.0, 11.0, 3};
    r.check = "pass";
    sink->Add(r);
    return Status::Ok();
  };
  return c;
}

TEST(OrderCases, PriorityFirstThenRoundRobinAcrossSuitesKeepingEachSuitesOrder) {
  const std::vector<std::vector<SuiteCase>> lists = {
      {Case("a0"), Case("a1", kMissionPriority), Case("a2")},
      {Case("b0"), Case("b1"), Case("b2", kLatePriority), Case("b3")},
      {Case("c0", kMissionPriority)},
  };
  const Order want = {{0, 1}, {2, 0},          // mission: a1, c0
                      {0, 0}, {1, 0}, {0, 2},  // sweep, round 1-2: a0 b0 a2
                      {1, 1}, {1, 3},          // b1 b3 (a is done)
                      {1, 2}};                 // late: b2
  EXPECT_EQ(OrderCases(lists), want);
  EXPECT_TRUE(OrderCases({}).empty());
  EXPECT_TRUE(OrderCases({{}, {}}).empty());
}

TEST(RunCaseLists, AFailedCaseIsAnErrorRecordAndTheSweepGoesOn) {
  const std::vector<std::vector<SuiteCase>> lists = {
      {Case("ok1"), Case("lt", kSweepPriority,
                         [](const SuiteOptions&, MeasurementSink*) {
                           return Status::Internal("cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED");
                         })},
      {Case("throws", kSweepPriority,
            [](const SuiteOptions&, MeasurementSink*) -> Status {
              throw std::runtime_error("host allocation failed");
            }),
       Case("ok2")},
  };
  const std::string path = test_util::TestTempPath("m.json");
  std::vector<size_t> seen;
  RunHooks hooks;
  hooks.checkpoint = [&](const SuiteRun& r) {
    seen.push_back(r.records.size());
    return WriteMeasurements(path, r.info, r.records);
  };
  int health_calls = 0;
  hooks.device_health = [&] {
    ++health_calls;
    return Status::Ok();  // errors that leave the device usable
  };
  SuiteRun run;
  RunCaseLists({"s1", "s2"}, lists, SuiteOptions{}, hooks, &run);
  ASSERT_EQ(run.records.size(), 4u);
  EXPECT_EQ(run.cases_run, 4);
  EXPECT_EQ(run.cases_failed, 2);
  // Each suite once, in the order their first failure came (the suites the
  // device script leaves out of its timed sweep).
  EXPECT_EQ(run.suites_failed, (std::vector<std::string>{"s2", "s1"}));
  EXPECT_EQ(health_calls, 2);
  EXPECT_FALSE(run.Clean());
  EXPECT_TRUE(run.stopped.empty());
  // Order ok1, throws, lt, ok2 (round-robin).
  EXPECT_EQ(run.records[0].check, "pass");
  EXPECT_EQ(run.records[1].check, "error");
  EXPECT_EQ(run.records[1].kernel, "k_throws");
  EXPECT_NE(run.records[1].error.find("host allocation failed"), std::string::npos);
  EXPECT_EQ(run.records[2].check, "error");
  EXPECT_EQ(run.records[2].variant, "lt");
  EXPECT_NE(run.records[2].error.find("NOT_SUPPORTED"), std::string::npos);
  EXPECT_EQ(run.records[3].kernel, "k_ok2");
  EXPECT_EQ(seen, (std::vector<size_t>{1, 2, 3, 4}));
  // The last checkpoint is a valid file holding the error records.
  Result<nlohmann::json> doc = ReadJsonFile(path);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_TRUE(ValidateMeasurementsJson(*doc, path).ok());
  EXPECT_EQ((*doc)["records"][2]["check"], "error");
  EXPECT_NE((*doc)["records"][2]["error"].get<std::string>().find("NOT_SUPPORTED"),
            std::string::npos);
}

TEST(RunCaseLists, AStickyDeviceErrorStopsTheRunKeepingWhatWasMeasured) {
  const std::vector<std::vector<SuiteCase>> lists = {
      {Case("ok"),
       Case("bad", kSweepPriority,
            [](const SuiteOptions&, MeasurementSink*) {
              return Status::Internal("kernel run: an illegal memory access");
            }),
       Case("never1"), Case("never2")},
  };
  RunHooks hooks;
  hooks.device_health = [] { return Status::Internal("sticky CUDA error"); };
  size_t last_checkpoint = 0;
  hooks.checkpoint = [&](const SuiteRun& r) {
    last_checkpoint = r.records.size();
    return Status::Ok();
  };
  SuiteRun run;
  RunCaseLists({"s"}, lists, SuiteOptions{}, hooks, &run);
  EXPECT_EQ(run.cases_run, 2);
  EXPECT_EQ(run.cases_cut, 2);
  ASSERT_EQ(run.records.size(), 2u);
  EXPECT_EQ(last_checkpoint, 2u);
  EXPECT_NE(run.stopped.find("s/bad"), std::string::npos) << run.stopped;
  EXPECT_NE(run.stopped.find("sticky"), std::string::npos) << run.stopped;
  EXPECT_FALSE(run.Clean());
}

TEST(RunCaseLists, ACheckFailureCountsButDoesNotStopAndCasesGetTheirOwnDeadline) {
  std::chrono::steady_clock::time_point seen_deadline{};
  const std::vector<std::vector<SuiteCase>> lists = {
      {Case("fails", kSweepPriority,
            [&](const SuiteOptions& o, MeasurementSink* sink) {
              seen_deadline = o.deadline;
              MeasurementRecord r;
              r.kernel = "k";
              r.op_class = "moe";
              r.dtype = "bf16";
              r.check = "fail";
              sink->Add(r);
              return Status::Ok();
            }),
       Case("after")},
  };
  SuiteOptions opt;
  opt.case_budget_s = 5.0;
  const auto before = std::chrono::steady_clock::now();
  SuiteRun run;
  RunCaseLists({"s"}, lists, opt, RunHooks{}, &run);
  EXPECT_EQ(run.cases_failed, 1);
  EXPECT_EQ(run.suites_failed, std::vector<std::string>{"s"});
  EXPECT_EQ(run.records.size(), 2u);
  EXPECT_TRUE(run.stopped.empty());
  EXPECT_GT(seen_deadline, before);
  EXPECT_LE(seen_deadline, std::chrono::steady_clock::now() + std::chrono::seconds(5));
}

TEST(RunCaseLists, NothingStartsPastTheDeadline) {
  SuiteOptions opt;
  opt.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  SuiteRun run;
  RunCaseLists({"s1", "s2"}, {{Case("a")}, {Case("b")}}, opt, RunHooks{}, &run);
  EXPECT_EQ(run.cases_run, 0);
  EXPECT_EQ(run.cases_cut, 2);
  EXPECT_TRUE(run.records.empty());
  EXPECT_EQ(run.suites_cut, (std::vector<std::string>{"s1", "s2"}));
}

TEST(ErrorRecord, ValidatesAndAnErrorRecordWithoutAMessageIsRejected) {
  const MeasurementRecord r = ErrorRecord(Case("x"), "boom");
  EXPECT_EQ(r.check, "error");
  EXPECT_EQ(r.error, "boom");
  RunInfo info;
  nlohmann::json doc = MeasurementsToJson(info, {r});
  EXPECT_TRUE(ValidateMeasurementsJson(doc, "t").ok());
  doc["records"][0].erase("error");
  const Status st = ValidateMeasurementsJson(doc, "t");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/records/0/error"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace capplan::kernels
