// A run whose requests stream out of the pool as they finish (RunScenario)
// against one that keeps every request to the end (Simulate without a sink,
// then SummarizeKept): the same summary, byte for byte, on every shipped
// scenario; and the streamed peak of requests in flight against a sweep
// line over the requests' [send, finish) intervals.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <sstream>
#include <utility>

#include "common/json_util.h"
#include "schema/run_summary.h"
#include "sim/prediction_intervals.h"
#include "sim/prepared_run.h"
#include "sim/request_log.h"
#include "sim/run_driver.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "tests/sim/scenario_cases.h"
#include "tests/test_util/simulate.h"

namespace capplan::sim {
namespace {

Result<std::shared_ptr<const Scenario>> Load(const Case& c) {
  const std::string path = DataPath("scenarios/" + c.file);
  if (c.workload.is_null()) return LoadScenarioFile(path, c.sets);
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  doc["workload"] = c.workload;
  return ParseScenario(doc, path);
}

// The summary of pool 0 of `sc` run alone from the requests `sim` kept
// (SimConfig::sink null), as the run driver writes it when the requests
// stream out of the pool.
RunResult SummarizeKept(const Scenario& sc, const PreparedRun& prep, const SimResult& sim) {
  RequestLog log(RequestLog::Options{.slo = {sc.slo.ttft_ms, sc.slo.tpot_ms, sc.slo.e2el_ms},
                                     .expected = static_cast<int64_t>(sim.requests.size()),
                                     .ttft_split = TtftSplitOf(sc)});
  PoolTally tally;
  for (const ReqState& r : sim.requests) {
    log.OnRetired(r);
    CountLeft(r, &tally);
  }
  RunResult out;
  out.summary = SummarizeRun(sc, prep.profile(), log, sim, {prep.SummarizePool(sim, tally, false)});
  return out;
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
  RunResult kept = SummarizeKept(**sc, **prep, *sim);
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
  log.Flush();
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

// How requests.csv rows were written with an iostream before they were
// formatted by hand; the file must not change by a byte.
std::string IostreamRow(const ReqState& r) {
  auto ms = [](int64_t ns) { return static_cast<double>(ns) / 1e6; };
  const bool ok = r.status == ReqStatus::kDone;
  const double ttft = ok ? ms(r.first_token_ns - r.arrival_ns) : 0;
  const double e2el = ok ? ms(r.finish_ns - r.arrival_ns) : 0;
  const double tpot = ok && r.generated > 1 ? (e2el - ttft) / (r.generated - 1) : 0;
  std::ostringstream os;
  os.precision(9);
  os << r.id << ',' << r.instance << ',' << r.rank << ',' << ms(r.arrival_ns) << ','
     << (r.first_token_ns >= 0 ? ms(r.first_token_ns) : -1) << ',' << ms(r.finish_ns) << ','
     << r.input << ',' << r.generated << ',' << ttft << ',' << tpot << ',' << e2el << ','
     << r.retractions << ',' << (r.warmup ? 1 : 0) << ',' << (ok ? "completed" : "failed") << '\n';
  return os.str();
}

// A nanosecond time: zero, -1 (not yet), small, at a rounding boundary of
// the 9 significant digits written (...5 in the 10th), or huge; within
// +-2^60 so differences do not overflow.
int64_t RandomNs(std::mt19937_64& rng) {
  int64_t mag = int64_t{1};
  for (int e = static_cast<int>(rng() % 18); e > 0; --e) mag *= 10;
  switch (rng() % 6) {
    case 0: return rng() % 3 == 0 ? -1 : 0;
    case 1: return static_cast<int64_t>(rng() % 1000);
    case 2: return (static_cast<int64_t>(rng() % 100'000'000'000) * 10 + 5) % (int64_t{1} << 60);
    case 3: return static_cast<int64_t>(rng() >> 4) - (int64_t{1} << 59);
    case 4: return mag * static_cast<int64_t>(1 + rng() % 9) + 5 * mag / 10 * (rng() % 2);
    default: return static_cast<int64_t>(rng() % static_cast<uint64_t>(mag + 1));
  }
}

TEST(RequestLog, RowsAreByteForByteWhatTheIostreamWrote) {
  std::mt19937_64 rng(7);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  for (int i = 0; i < 200'000; ++i) {
    ReqState r;
    r.id = i % 50 == 0 ? (i % 100 == 0 ? kMax : kMin) : static_cast<int64_t>(rng() % 1'000'000);
    r.instance = static_cast<int32_t>(rng() % 5) - 1;
    r.rank = i % 77 == 0 ? std::numeric_limits<int32_t>::min() : static_cast<int32_t>(rng() % 9);
    r.arrival_ns = RandomNs(rng);
    r.first_token_ns = rng() % 2 ? r.arrival_ns + RandomNs(rng) : RandomNs(rng);
    r.finish_ns = rng() % 2 ? r.first_token_ns + RandomNs(rng) : RandomNs(rng);
    r.input = RandomNs(rng);
    r.generated = rng() % 4 == 0 ? static_cast<int64_t>(rng() % 3) : RandomNs(rng);
    r.retractions = static_cast<int32_t>(rng() % 3);
    r.warmup = rng() % 2 == 0;
    r.status = rng() % 4 == 0 ? ReqStatus::kFailed : ReqStatus::kDone;
    std::string row;
    AppendRequestRow(&row, r);
    ASSERT_EQ(row, IostreamRow(r)) << "request " << i;
  }
}

// The times a row writes by scaling to 9 digits, and those it hands to the
// general formatter: under 1e-4 ms and from 1e9 ms on (exponent form), each
// power of ten and its neighbours, 9-digit values one ns either side of a
// half, and a TPOT that divides a time.
TEST(RequestLog, TimesAtTheFormatsEdgesMatchTheIostream) {
  std::vector<int64_t> ns = {0, 1, 99, 100, 101, 999'999'999'500'000, 999'999'999'499'999,
                             999'999'999'999'999, 1'000'000'000'000'000};
  int64_t p = 1;
  for (int e = 0; e <= 18; ++e, p = e <= 18 ? p * 10 : p) {
    for (int64_t d : {-1, 0, 1, 5}) ns.push_back(p + d);
    // 9 significant digits of ms and a half more, 1 ns either side.
    if (p >= 1'000'000'000) {
      const int64_t unit = p / 100'000'000;  // of the 9th digit
      for (int64_t d : {-1, 0, 1}) ns.push_back(unit * 123'456'789 + unit / 2 + d);
    }
  }
  for (const int64_t a : ns) {
    for (const int64_t generated : {int64_t{2}, int64_t{3}, int64_t{7}, int64_t{1000}}) {
      ReqState r = Finished(0, a);
      r.arrival_ns = a;
      r.first_token_ns = a + a / 3;
      r.finish_ns = r.first_token_ns + a / 7 + 1;
      r.generated = generated;
      std::string row;
      AppendRequestRow(&row, r);
      ASSERT_EQ(row, IostreamRow(r)) << "arrival " << a << " ns, generated " << generated;
    }
  }
}

TEST(RequestLog, ManyRowsStreamWhole) {
  std::ostringstream csv, expected;
  expected << kRequestsCsvHeader;
  RequestLog log({.csv = &csv});
  for (int32_t idx = 0; idx < 5000; ++idx) {
    const ReqState r = Finished(idx, 1'234'567'895 * int64_t{idx});
    log.OnRetired(r);
    expected << IostreamRow(r);
  }
  log.Flush();
  EXPECT_TRUE(csv.str() == expected.str());
}

}  // namespace
}  // namespace capplan::sim
