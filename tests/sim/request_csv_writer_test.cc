// requests.csv written by the writer thread against the same rows written
// by the thread that adds them: the same bytes, whatever the batch size,
// the order requests retire in, or where the run flushes.
#include "sim/request_csv_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "sim/request_csv.h"
#include "schema/run_summary.h"
#include "sim/request_log.h"

namespace capplan::sim {
namespace {

std::vector<ReqState> RandomRequests(int32_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<ReqState> reqs(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    ReqState& r = reqs[static_cast<size_t>(i)];
    r.idx = i;
    r.id = 1000 + i;
    r.instance = static_cast<int32_t>(rng() % 4);
    r.rank = static_cast<int32_t>(rng() % 8);
    r.arrival_ns = static_cast<int64_t>(rng() % 3'600'000'000'000);
    r.first_token_ns = r.arrival_ns + static_cast<int64_t>(rng() % 5'000'000'000);
    r.finish_ns = r.first_token_ns + static_cast<int64_t>(rng() % 90'000'000'000);
    r.input = static_cast<int64_t>(rng() % 100'000);
    r.generated = static_cast<int64_t>(rng() % 4096);
    r.retractions = static_cast<int32_t>(rng() % 3);
    r.warmup = rng() % 10 == 0;
    r.status = rng() % 20 == 0 ? ReqStatus::kFailed : ReqStatus::kDone;
  }
  return reqs;
}

std::string Expected(const std::vector<ReqState>& reqs) {
  std::string out = kRequestsCsvHeader;
  for (const ReqState& r : reqs) AppendRequestRow(&out, r);
  return out;
}

std::string Written(const std::vector<ReqState>& reqs, const RequestCsvWriter::Options& opt) {
  std::ostringstream os;
  RequestCsvWriter w(&os, kRequestsCsvHeader, opt);
  for (const ReqState& r : reqs) w.Add(r);
  w.Flush();
  return os.str();
}

TEST(RequestCsvWriter, ThreadedWritesTheSynchronousBytes) {
  const std::vector<ReqState> reqs = RandomRequests(50'000, 11);
  const std::string expected = Expected(reqs);
  const std::string sync = Written(reqs, {.threaded = false});
  EXPECT_TRUE(sync == expected);
  // Batches of every size, a few rows (the queue full most of the time:
  // the adding thread waits for room) to more than the run.
  for (const size_t rows : {size_t{3}, size_t{64}, size_t{4096}, size_t{200'000}}) {
    const std::string threaded = Written(reqs, {.threaded = true, .batch_rows = rows});
    EXPECT_EQ(threaded.size(), expected.size()) << rows << " rows a batch";
    EXPECT_TRUE(threaded == expected) << rows << " rows a batch";
  }
}

TEST(RequestCsvWriter, RowsAddedAfterAFlushFollow) {
  const std::vector<ReqState> reqs = RandomRequests(30'000, 12);
  std::ostringstream os;
  RequestCsvWriter w(&os, "header\n", {.threaded = true, .batch_rows = 100});
  for (size_t i = 0; i < reqs.size(); ++i) {
    w.Add(reqs[i]);
    if (i == 9'999 || i == 10'000) {
      w.Flush();
      std::string expected = "header\n";
      for (size_t j = 0; j <= i; ++j) AppendRequestRow(&expected, reqs[j]);
      ASSERT_TRUE(os.str() == expected) << "at row " << i;
    }
  }
  w.Flush();
  EXPECT_TRUE(os.str() ==
              "header\n" + Expected(reqs).substr(std::string(kRequestsCsvHeader).size()));
}

TEST(RequestCsvWriter, DestructionWritesEveryRow) {
  const std::vector<ReqState> reqs = RandomRequests(20'000, 13);
  std::ostringstream os;
  {
    RequestCsvWriter w(&os, kRequestsCsvHeader, {.threaded = true, .batch_rows = 64});
    for (const ReqState& r : reqs) w.Add(r);
  }
  EXPECT_TRUE(os.str() == Expected(reqs));
}

// A disk that fills up after `room` bytes.
class FullDisk : public std::streambuf {
 public:
  explicit FullDisk(size_t room) : room_(room) {}

 protected:
  std::streamsize xsputn(const char*, std::streamsize n) override {
    const std::streamsize took = std::min<std::streamsize>(n, static_cast<std::streamsize>(room_));
    room_ -= static_cast<size_t>(took);
    return took;
  }
  int_type overflow(int_type c) override {
    if (room_ == 0) return traits_type::eof();
    --room_;
    return c;
  }

 private:
  size_t room_;
};

TEST(RequestCsvWriter, AWriteErrorIsInTheStreamsState) {
  FullDisk disk(1 << 20);
  std::ostream os(&disk);
  RequestCsvWriter w(&os, kRequestsCsvHeader, {.threaded = true, .batch_rows = 512});
  for (const ReqState& r : RandomRequests(50'000, 14)) w.Add(r);
  w.Flush();
  EXPECT_TRUE(os.bad());
}

// RequestLog holds the requests that retire early and passes them on in
// index order; the rows the writer thread gets are in that order.
TEST(RequestCsvWriter, RequestLogRowsRetiredOutOfOrderComeInIndexOrder) {
  const std::vector<ReqState> reqs = RandomRequests(60'000, 15);
  std::vector<ReqState> retired = reqs;
  std::mt19937_64 rng(16);
  for (size_t at = 0; at < retired.size(); at += 100) {
    std::shuffle(retired.begin() + static_cast<std::ptrdiff_t>(at),
                 retired.begin() + static_cast<std::ptrdiff_t>(std::min(at + 100, retired.size())),
                 rng);
  }
  std::ostringstream csv;
  std::vector<ReqState> keep;
  {
    RequestLog log({.csv = &csv, .keep = &keep});
    for (const ReqState& r : retired) log.OnRetired(r);
    log.Flush();
    EXPECT_EQ(log.passed(), static_cast<int64_t>(reqs.size()));
    EXPECT_GT(log.peak_held(), 1);
  }
  EXPECT_TRUE(csv.str() == Expected(reqs));
  ASSERT_EQ(keep.size(), reqs.size());
  EXPECT_EQ(keep.back().idx, reqs.back().idx);
}

// A large run's log passes requests on from a thread of its own: the same
// rows, states and statistics as the log that passes them where they retire.
TEST(RequestCsvWriter, RequestLogOnItsOwnThreadPassesOnTheSame) {
  const std::vector<ReqState> reqs = RandomRequests(50'000, 21);
  std::vector<ReqState> retired = reqs;
  std::mt19937_64 rng(22);
  for (size_t at = 0; at < retired.size(); at += 300) {
    std::shuffle(retired.begin() + static_cast<std::ptrdiff_t>(at),
                 retired.begin() + static_cast<std::ptrdiff_t>(std::min(at + 300, retired.size())),
                 rng);
  }
  struct Passed {
    std::string csv;
    std::vector<ReqState> keep;
    schema::RunSummary summary;
    int64_t peak_held = 0;
  };
  auto run = [&](int64_t thread_from) {
    Passed p;
    std::ostringstream csv;
    {
      RequestLog log({.slo = {2000.0, std::nullopt, std::nullopt},
                      .csv = &csv,
                      .keep = &p.keep,
                      .expected = static_cast<int64_t>(reqs.size()),
                      .thread_from = thread_from});
      for (const ReqState& r : retired) log.OnRetired(r);
      log.Flush();
      EXPECT_EQ(log.passed(), static_cast<int64_t>(reqs.size()));
      log.e2e().Summarize(8, 2.5, &p.summary);
      p.peak_held = log.peak_held();
    }
    p.csv = csv.str();
    return p;
  };
  const Passed here = run(INT64_MAX), threaded = run(0);
  EXPECT_TRUE(threaded.csv == here.csv);
  EXPECT_TRUE(here.csv == Expected(reqs));
  ASSERT_EQ(threaded.keep.size(), here.keep.size());
  for (size_t i = 0; i < here.keep.size(); ++i) ASSERT_EQ(threaded.keep[i].idx, here.keep[i].idx);
  EXPECT_EQ(schema::ToJson(threaded.summary).dump(), schema::ToJson(here.summary).dump());
  EXPECT_GT(*here.summary.ttft.p99, 0.0);
  EXPECT_EQ(threaded.peak_held, here.peak_held);
}

}  // namespace
}  // namespace capplan::sim
