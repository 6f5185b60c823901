// A kernel table measured at one engine release and used to price another is
// a named cross-version transfer: --explain-step marks each such op, the
// summary's warnings list the table once, and the prediction intervals widen
// by the table's version drift weighted by the busy time it prices.
#include <gtest/gtest.h>

#include <string>

#include "sim/prediction_intervals.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "sim/step_explain.h"

namespace capplan::sim {
namespace {

// Llama-3.1-8B on one H200 under vLLM: its BF16 GEMMs and FA3 prefill are
// priced by tables of vLLM 0.24.0 records (calibrate/profiles/h200-sxm.json).
nlohmann::json VllmAt(const std::string& version) {
  return nlohmann::json::parse(R"({
    "name": "t", "model": "llama-3.1-8b", "hardware": "h200-sxm",
    "deployment": {"gpus": 1, "tp": 1, "engine": "vllm", "engine_version": ")" +
                               version + R"("},
    "workload": {"kind": "closed_loop", "concurrency": 16, "num_requests": 64,
                 "warmup_requests": 16,
                 "input_tokens": {"dist": "fixed", "value": 512},
                 "output_tokens": {"dist": "fixed", "value": 64}, "seed": 1}})");
}

Result<std::string> Explain(const std::string& version) {
  CAPPLAN_ASSIGN_OR_RETURN(auto sc, ParseScenario(VllmAt(version), "t.json"));
  ExplainOptions e;
  e.decode_batch = 16;
  e.decode_context = 512;
  return ExplainSteps(*sc, e);
}

Result<schema::RunSummary> RunAt(const std::string& version) {
  CAPPLAN_ASSIGN_OR_RETURN(auto sc, ParseScenario(VllmAt(version), "t.json"));
  CAPPLAN_ASSIGN_OR_RETURN(RunResult r, RunScenario(*sc, RunOptions{}));
  return r.summary;
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ExplainCrossVersion, AnOlderReleasePricedByNewerTablesIsMarkedPerOp) {
  auto old_text = Explain("0.10.0");
  ASSERT_TRUE(old_text.ok()) << old_text.status().message();
  const std::string mark = std::string(kCrossVersionText) +
                           " measured at vllm 0.24.0 (H100, H200), priced for vllm 0.10.0";
  EXPECT_NE(old_text->find("| attn.q_proj | "), std::string::npos) << *old_text;
  // Every BF16 GEMM row of both steps (q, k, v, o, gate_up, down) at least.
  EXPECT_GE(Count(*old_text, mark), 12) << *old_text;
  EXPECT_NE(old_text->find("(version drift 8.9%)"), std::string::npos) << *old_text;

  auto own = Explain("0.24.0");
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_EQ(own->find(kCrossVersionText), std::string::npos) << *own;
  // The table still says where it was measured.
  EXPECT_NE(own->find("| vllm 0.24.0 (H100, H200) |"), std::string::npos) << *own;
}

TEST(PredictionIntervalsCrossVersion, WidenByTheDriftOfTheBusyTimeItPrices) {
  auto old_run = RunAt("0.10.0");
  auto own = RunAt("0.24.0");
  ASSERT_TRUE(old_run.ok()) << old_run.status().message();
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_EQ(CrossVersionDrift(*own), 0);
  const double d = CrossVersionDrift(*old_run);
  // The tables drift 8.885%; they price part, not all, of the busy time.
  EXPECT_GT(d, 0.01);
  EXPECT_LT(d, 0.08885);
  // The same run with its cross-version time read as measured at this
  // release: the band is narrower (sim/prediction_intervals.h).
  schema::RunSummary same = *old_run;
  for (auto& p : same.pools) {
    auto& share = *p.provenance_time_share;
    share["measured"] += share["cross_version"];
    share["cross_version"] = 0;
    (*p.provenance_spread)["measured"] = (*p.provenance_spread)["cross_version"] / 2;
  }
  ASSERT_TRUE(AddPredictionIntervals(&same).ok());
  for (const char* key : {"median_tpot_ms", "p90_ttft_ms", "output_throughput"}) {
    const schema::Interval& a = old_run->intervals.at(key);
    const schema::Interval& b = same.intervals.at(key);
    EXPECT_GT(a.hi / a.lo, b.hi / b.lo) << key;
  }
  // Each cross-version table is listed once in the warnings, none at 0.24.0.
  int gemm = 0, any_old = 0, any_own = 0;
  for (const auto& p : old_run->pools) {
    for (const std::string& w : p.warnings.value_or(std::vector<std::string>{})) {
      if (w.find(kCrossVersionText) == std::string::npos) continue;
      ++any_old;
      if (w.find("kernel table 'vllm_torch_bf16_gemm'") == 0) ++gemm;
    }
  }
  for (const auto& p : own->pools) {
    for (const std::string& w : p.warnings.value_or(std::vector<std::string>{})) {
      if (w.find(kCrossVersionText) != std::string::npos) ++any_own;
    }
  }
  EXPECT_EQ(gemm, 1);
  EXPECT_GE(any_old, 1);
  EXPECT_EQ(any_own, 0);
}

}  // namespace
}  // namespace capplan::sim
