// A run's measured window and steady state: a closed loop's window
// occupancy by Little's law, the warning and widened intervals of a window
// too short, the default length that reaches steady state, and the GLM-5.2
// decode study giving one throughput (within 2%) at every length accepted
// without a warning.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "common/json_util.h"
#include "sim/metrics.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "sim/steady_state.h"

namespace capplan::sim {
namespace {

// Four requests of 1 s each, two at a time back to back: two in flight for
// the whole 2 s window.
TEST(SteadyState, LittlesLawOverTheMeasuredWindow) {
  E2eAccumulator acc;
  for (int i = 0; i < 4; ++i) {
    E2eRequest r;
    r.send_ns = (i / 2) * 1'000'000'000LL;
    r.first_token_ns = r.send_ns + 1'000'000;
    r.finish_ns = r.send_ns + 1'000'000'000LL;
    r.generated = 10;
    r.done = true;
    acc.Add(r);
  }
  schema::RunSummary s;
  const E2eTotals t = acc.Summarize(1, 1.0, &s);
  EXPECT_DOUBLE_EQ(t.mean_in_flight, 2.0);
  Workload w;
  w.kind = "closed_loop";
  w.concurrency = 2;
  EXPECT_DOUBLE_EQ(*WindowOccupancy(w, t), 1.0);
  w.concurrency = 4;
  EXPECT_DOUBLE_EQ(*WindowOccupancy(w, t), 0.5);
  w.kind = "open_loop";
  EXPECT_FALSE(WindowOccupancy(w, t).has_value());
}

nlohmann::json GlmDecode() {
  auto text = ReadFile(DataPath("scenarios/glm-5.2-decode-int4.json"));
  EXPECT_TRUE(text.ok());
  auto doc = ParseJson(*text, "glm-5.2-decode-int4.json");
  EXPECT_TRUE(doc.ok());
  (*doc)["workload"]["concurrency"] = 64;
  (*doc)["workload"]["num_requests"] = 80;  // the study's length before it gave none
  (*doc)["workload"]["warmup_requests"] = 8;
  return *doc;
}

Result<schema::RunSummary> RunDoc(const nlohmann::json& doc) {
  CAPPLAN_ASSIGN_OR_RETURN(auto sc, ParseScenario(doc, "glm.json"));
  CAPPLAN_ASSIGN_OR_RETURN(RunResult r, RunScenario(*sc, RunOptions{}));
  return r.summary;
}

bool WarnsShortWindow(const schema::RunSummary& s) {
  for (const schema::PoolSummary& p : s.pools) {
    for (const std::string& w : p.warnings.value_or(std::vector<std::string>{})) {
      if (w.rfind("steady state not reached", 0) == 0) return true;
    }
  }
  return false;
}

// The study's own 80 requests at concurrency 64: warned, with a length
// that reaches steady state named, and intervals widened by the occupancy.
TEST(SteadyState, ShortWindowWarnsAndWidens) {
  nlohmann::json doc = GlmDecode();
  auto s = RunDoc(doc);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE(s->window_occupancy.has_value());
  EXPECT_LT(*s->window_occupancy, 0.7);
  EXPECT_TRUE(WarnsShortWindow(*s));
  const schema::Interval iv = s->intervals.at("output_throughput");
  // Unwidened, the interval's ends are fixed ratios of the point; widened,
  // the high end reaches past the point by more than 1 / occupancy.
  EXPECT_GT(iv.hi / *s->output_throughput, 1.0 / *s->window_occupancy);
}

// Leaving num_requests out gives a window at steady state; any length the
// simulator accepts without a warning gives the same throughput within 2%.
TEST(SteadyState, AcceptedLengthsAgreeWithinTwoPercent) {
  nlohmann::json doc = GlmDecode();
  doc["workload"].erase("num_requests");
  doc["workload"].erase("warmup_requests");
  auto dflt = RunDoc(doc);
  ASSERT_TRUE(dflt.ok()) << dflt.status().message();
  EXPECT_FALSE(WarnsShortWindow(*dflt));
  EXPECT_EQ(dflt->workload["num_requests"], 64 * 41);
  EXPECT_EQ(dflt->workload["warmup_requests"], 64);
  EXPECT_GE(*dflt->window_occupancy, kSteadyOccupancy);
  // `--set workload.num_requests=null` asks for the same default.
  nlohmann::json nulls = doc;
  nulls["workload"]["num_requests"] = nullptr;
  nulls["workload"]["warmup_requests"] = nullptr;
  auto same = RunDoc(nulls);
  ASSERT_TRUE(same.ok()) << same.status().message();
  EXPECT_EQ(*same->output_throughput, *dflt->output_throughput);
  double lo = *dflt->output_throughput, hi = lo;
  int accepted = 1, refused = 0;
  for (int64_t n : {640, 1280, 1984, 3200, 5248}) {
    for (int64_t warmup : {8, 64}) {
      doc["workload"]["num_requests"] = n;
      doc["workload"]["warmup_requests"] = warmup;
      auto s = RunDoc(doc);
      ASSERT_TRUE(s.ok()) << s.status().message();
      if (WarnsShortWindow(*s)) {
        ++refused;
        EXPECT_LT(*s->window_occupancy, kSteadyOccupancy);
        continue;
      }
      ++accepted;
      lo = std::min(lo, *s->output_throughput);
      hi = std::max(hi, *s->output_throughput);
    }
  }
  EXPECT_GE(accepted, 3);
  EXPECT_GE(refused, 2);  // 640 and 1280 requests: about 10 and 20 waves
  EXPECT_LE(hi / lo, 1.02) << lo << " .. " << hi;
}

}  // namespace
}  // namespace capplan::sim
