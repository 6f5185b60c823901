// Fast-forward of steady decode (sim/serving_pool.h) against the
// iteration-by-iteration path: every shipped scenario and variants covering
// both schedulers, PD, DP attention, several replicas, open loop, a trace,
// sessions with the prefix cache, and a KV-bound run with retractions. Every
// request's timestamps must be identical and every summary number within
// 0.1% (they differ only in the order of floating-point sums of busy time).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "common/data_path.h"
#include "common/json_util.h"
#include "common/memory_budget.h"
#include "sim/scenario.h"
#include "sim/sim_state.h"
#include "sim/simulate.h"
#include "tests/sim/scenario_cases.h"
#include "tests/test_util/expect_text.h"

namespace capplan::sim {
namespace {

using test_util::ExpectContains;

struct Run {
  nlohmann::json summary;
  std::string requests_csv;  // every request's timestamps (PD too)
  std::vector<ReqState> requests;
};

Result<Run> RunCase(const Case& c, bool fast_forward) {
  const std::string path = DataPath("scenarios/" + c.file);
  std::shared_ptr<const Scenario> sc;
  if (c.workload.is_null()) {
    CAPPLAN_ASSIGN_OR_RETURN(sc, LoadScenarioFile(path, c.sets));
  } else {
    CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
    doc["workload"] = c.workload;
    CAPPLAN_ASSIGN_OR_RETURN(sc, ParseScenario(doc, path));
  }
  RunOptions opt;
  opt.fast_forward = fast_forward;
  opt.want_requests_csv = true;
  Run out;
  opt.requests_out = &out.requests;
  CAPPLAN_ASSIGN_OR_RETURN(RunResult r, RunScenario(*sc, opt));
  out.summary = schema::ToJson(r.summary);
  out.requests_csv = std::move(r.requests_csv);
  return out;
}

// Every number in `a` against `b`, by JSON path.
void ExpectClose(const nlohmann::json& a, const nlohmann::json& b, const std::string& path) {
  ASSERT_EQ(a.type(), b.type()) << path;
  if (a.is_object()) {
    for (const auto& [k, v] : a.items()) {
      // The simulator's own bookkeeping differs by design.
      if (k == "step_cost_memo_hits" || k == "step_cost_memo_misses" ||
          k == "fast_forward_iterations" || k == "fast_forward_completions") {
        continue;
      }
      ASSERT_TRUE(b.contains(k)) << path << "/" << k;
      ExpectClose(v, b[k], path + "/" + k);
    }
    EXPECT_EQ(a.size(), b.size()) << path;
  } else if (a.is_array()) {
    ASSERT_EQ(a.size(), b.size()) << path;
    for (size_t i = 0; i < a.size(); ++i) ExpectClose(a[i], b[i], path + "/" + std::to_string(i));
  } else if (a.is_number_float()) {
    const double x = a.get<double>(), y = b.get<double>();
    EXPECT_LE(std::abs(x - y), 1e-3 * std::max(std::abs(x), std::abs(y)) + 1e-12)
        << path << ": " << x << " vs " << y;
  } else {
    EXPECT_EQ(a, b) << path;
  }
}

// A simulator count (fast_forward_iterations by default) summed over the
// summary's pools.
int64_t Skipped(const nlohmann::json& j, const std::string& key = "fast_forward_iterations") {
  int64_t n = 0;
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      n += k == key ? v.get<int64_t>() : Skipped(v, key);
    }
  }
  return n;
}

class FastForward : public ::testing::TestWithParam<Case> {};

TEST_P(FastForward, SameAnswersAsEveryIteration) {
  auto fast = RunCase(GetParam(), true);
  auto slow = RunCase(GetParam(), false);
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  ASSERT_TRUE(slow.ok()) << slow.status().message();
  ExpectClose(fast->summary, slow->summary, "");
  EXPECT_TRUE(fast->requests_csv == slow->requests_csv) << "requests.csv differs";
  ASSERT_EQ(fast->requests.size(), slow->requests.size());
  for (size_t i = 0; i < fast->requests.size(); ++i) {
    const ReqState& f = fast->requests[i];
    const ReqState& s = slow->requests[i];
    ASSERT_EQ(f.first_token_ns, s.first_token_ns) << "request " << i;
    ASSERT_EQ(f.finish_ns, s.finish_ns) << "request " << i;
    ASSERT_EQ(f.generated, s.generated) << "request " << i;
    ASSERT_EQ(f.retractions, s.retractions) << "request " << i;
    ASSERT_EQ(f.status, s.status) << "request " << i;
  }
  EXPECT_EQ(Skipped(slow->summary), 0);
  EXPECT_EQ(Skipped(slow->summary, "fast_forward_completions"), 0);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, FastForward, ::testing::ValuesIn(Cases()), CaseName);

// The fast path must actually skip: a decode-only closed loop in lock step
// is almost all steady decode (every request finishes after 1,024 tokens
// together).
// The retraction case above does retract (else it would test nothing).
TEST(FastForwardEngages, TheKvBoundCaseRetracts) {
  for (const Case& c : Cases()) {
    if (c.name != "kimi_kv_bound_retractions") continue;
    auto fast = RunCase(c, true);
    ASSERT_TRUE(fast.ok()) << fast.status().message();
    EXPECT_GT(fast->summary["retractions"].get<int64_t>(), 0);
    EXPECT_GT(Skipped(fast->summary), 0);
  }
}

TEST(FastForwardEngages, DecodeOnlyClosedLoopSkipsMostIterations) {
  Case c{"kimi", "kimi-k2.6-kv-fp8.json", {"workload.client=lock_step"}, nullptr};
  auto fast = RunCase(c, true);
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  const int64_t it = fast->summary["iterations"];
  EXPECT_GT(Skipped(fast->summary), it * 9 / 10) << it;
}

// An open-loop replica with nothing waiting folds completions into the
// skip, with either scheduler; the equality test above holds them to the
// iteration-by-iteration answers.
TEST(FastForwardEngages, OpenLoopFoldsCompletions) {
  for (const char* file : {"llama-3.1-70b-tp4.json", "llama-3.1-70b-tp4-vllm.json"}) {
    Case c{"open", file, {}, nullptr};
    auto fast = RunCase(c, true);
    ASSERT_TRUE(fast.ok()) << fast.status().message();
    const int64_t done = fast->summary["completed"];
    EXPECT_GT(Skipped(fast->summary, "fast_forward_completions"), done / 4) << file << " " << done;
  }
}

// A closed loop on an engine that overlaps its schedules (SGLang's default)
// folds its completions too: the next request a completion sends is first
// seen two step ends later, so the skip runs on to there.
TEST(FastForwardEngages, OverlappedClosedLoopFoldsCompletions) {
  Case c{"closed", "kimi-k2.6-kv-fp8.json", {"workload.num_requests=400"}, nullptr};
  auto fast = RunCase(c, true);
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  const int64_t done = fast->summary["completed"];
  EXPECT_GT(Skipped(fast->summary, "fast_forward_completions"), done / 2) << done;
}

// In a PD pair the decode pool's steady stretches are cut by the prefill
// pool's step ends and the transfers, but still skip.
TEST(FastForwardEngages, PdDecodePoolSkips) {
  Case c{"pd", "pd-kimi-k2.6.json", {}, nullptr};
  auto fast = RunCase(c, true);
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  const auto& dec = fast->summary["pools"]["decode"];
  EXPECT_GT(dec["simulator"]["fast_forward_iterations"].get<int64_t>(), 0);
  EXPECT_EQ(fast->summary["pools"]["prefill"]["simulator"]["fast_forward_iterations"], 0);
}

// A run that would take far longer than is reasonable is refused before it
// starts, with the estimate and the way on.
TEST(RunTimeEstimate, IterationByIterationOfHugeRunsIsRefusedUpFront) {
  auto doc = ReadJsonFile(DataPath("scenarios/llama-3.1-70b-tp4.json"));
  ASSERT_TRUE(doc.ok());
  (*doc)["workload"] = nlohmann::json::parse(R"({"kind": "open_loop", "request_rate": 1,
      "num_requests": 1000000, "warmup_requests": 0,
      "input_tokens": {"dist": "fixed", "value": 16},
      "output_tokens": {"dist": "fixed", "value": 100000}})");
  auto sc = ParseScenario(*doc, "huge.json");
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  RunOptions slow;
  slow.fast_forward = false;
  auto r = RunScenario(**sc, slow);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUsage);
  const std::string& m = r.status().message();
  ExpectContains(m,
                 "huge.json: simulating 1000000 requests (1e+11 output tokens) iteration by "
                 "iteration (--no-fast-forward) would take an estimated 42 min");
  ExpectContains(m, "drop --no-fast-forward");
  ExpectContains(m, "--yes");
  EXPECT_TRUE(CheckTimeEstimate(kRunTimeBudgetS, "x", "y").ok());
  EXPECT_EQ(CheckTimeEstimate(2 * 3600 + 360, "x", "y").message(),
            "x would take an estimated 2.1 h; y, or pass --yes to run it anyway");
  SetMemoryCheckDisabled(true);
  EXPECT_TRUE(CheckTimeEstimate(1e9, "x", "y").ok());
  SetMemoryCheckDisabled(false);
}

}  // namespace
}  // namespace capplan::sim
