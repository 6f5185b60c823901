// A run whose requests stream out of the pool as they finish (RunScenario)
// against one that keeps every request to the end (Simulate without a sink,
// then Summarize): the same summary, byte for byte, on every shipped
// scenario; and the streamed peak of requests in flight against a sweep
// line over the requests' [send, finish) intervals.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <utility>

#include "common/json_util.h"
#include "schema/run_summary.h"
#include "sim/prediction_intervals.h"
#include "sim/prepared_run.h"
#include "sim/request_log.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "tests/sim/scenario_cases.h"

namespace capplan::sim {
namespace {

Result<std::shared_ptr<const Scenario>> Load(const Case& c) {
  const std::string path = DataPath("scenarios/" + c.file);
  if (c.workload.is_null()) return LoadScenarioFile(path, c.sets);
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  doc["workload"] = c.workload;
  return ParseScenario(doc, path);
}

// The most requests in flight at once; at equal times a finish comes first.
int64_t SweepLinePeak(const std::vector<ReqState>& reqs) {
  std::vector<std::pair<int64_t, int>> ev;
  for (const auto& r : reqs) {
    ev.push_back({r.arrival_ns, +1});
    ev.push_back({r.finish_ns, -1});
  }
  std::sort(ev.begin(), ev.end());
  int64_t cur = 0, peak = 0;
  for (const auto& [t, d] : ev) peak = std::max(peak, cur += d);
  return peak;
}

class StreamedRequests : public ::testing::TestWithParam<Case> {};

TEST_P(StreamedRequests, SameSummaryAsKeepingEveryRequest) {
  auto sc = Load(GetParam());
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  if ((*sc)->transfer) GTEST_SKIP() << "linked pools keep their requests for the per-request join";
  RunOptions opt;
  opt.want_requests_csv = true;
  std::vector<ReqState> streamed_reqs;
  opt.requests_out = &streamed_reqs;
  auto streamed = RunScenario(**sc, opt);
  ASSERT_TRUE(streamed.ok()) << streamed.status().message();

  auto prep = PrepareRun(**sc, 0, RunOptions{});
  ASSERT_TRUE(prep.ok()) << prep.status().message();
  auto sim = Simulate((*prep)->config(), (*prep)->requests(), (*prep)->pricer());
  ASSERT_TRUE(sim.ok()) << sim.status().message();
  ASSERT_TRUE((*prep)->config().sink == nullptr);
  RunResult kept = (*prep)->Summarize(*sim);
  ASSERT_TRUE(AddPredictionIntervals(&kept.summary).ok());
  EXPECT_EQ(DumpJson(schema::ToJson(streamed->summary)), DumpJson(schema::ToJson(kept.summary)));

  std::ostringstream csv;
  csv.precision(9);
  csv << kRequestsCsvHeader;
  for (const ReqState& r : sim->requests) WriteRequestRow(csv, r);
  EXPECT_TRUE(streamed->requests_csv == csv.str()) << "requests.csv differs";
  ASSERT_EQ(streamed_reqs.size(), sim->requests.size());
  for (size_t i = 0; i < streamed_reqs.size(); ++i) {
    EXPECT_EQ(streamed_reqs[i].idx, static_cast<int32_t>(i));
    EXPECT_EQ(streamed_reqs[i].finish_ns, sim->requests[i].finish_ns) << i;
  }
  EXPECT_EQ(streamed->summary.pools.at(0).max_concurrent_requests.value_or(-1),
            SweepLinePeak(sim->requests));
}

INSTANTIATE_TEST_SUITE_P(Scenarios, StreamedRequests, ::testing::ValuesIn(Cases()), CaseName);

ReqState Finished(int32_t idx, int64_t finish_ns) {
  ReqState r;
  r.idx = idx;
  r.id = 100 + idx;
  r.arrival_ns = 0;
  r.first_token_ns = finish_ns / 2;
  r.finish_ns = finish_ns;
  r.generated = 3;
  r.status = ReqStatus::kDone;
  return r;
}

TEST(RequestLog, PassesRequestsOnInIndexOrder) {
  std::vector<ReqState> keep;
  std::ostringstream csv;
  RequestLog log({.csv = &csv, .keep = &keep});
  for (int32_t idx : {2, 0, 4, 3, 1, 5}) log.OnRetired(Finished(idx, 1000 * (idx + 1)));
  EXPECT_EQ(log.passed(), 6);
  ASSERT_EQ(keep.size(), 6u);
  for (int32_t i = 0; i < 6; ++i) EXPECT_EQ(keep[static_cast<size_t>(i)].idx, i);
  // 2 waited for 0; then 2 and 4 for 1 (3 came before 1).
  EXPECT_EQ(log.peak_held(), 3);
  EXPECT_EQ(log.e2e().completed(), 6);
  std::istringstream lines(csv.str());
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line + "\n", kRequestsCsvHeader);
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(std::getline(lines, line));
    EXPECT_EQ(line.substr(0, line.find(',')), std::to_string(100 + i));
  }
}

TEST(RequestLog, APartialRunHasNotPassedEveryRequest) {
  RequestLog log({});
  log.OnRetired(Finished(1, 10));
  EXPECT_EQ(log.passed(), 0);
  log.OnRetired(Finished(0, 20));
  EXPECT_EQ(log.passed(), 2);
}

}  // namespace
}  // namespace capplan::sim
