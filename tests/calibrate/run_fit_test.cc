// calibrate --runs (calibrate/run_fit.h) on synthetic runs whose truth is
// known: "measured" figures are the simulator's own with a known overlay,
// so the fit must find that overlay's terms and leave the others alone.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibrate/public_self_calibration.h"
#include "calibrate/run_fit.h"
#include "common/atomic_file.h"
#include "common/json_util.h"
#include "schema/run_summary.h"
#include "sim/calibration_overlay.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "tests/test_util/shell.h"

namespace capplan::calibrate {
namespace {

nlohmann::json BaseScenario() {
  return {{"name", "synthetic-llama-8b"},
          {"model", "llama-3.1-8b"},
          {"hardware", "h200-sxm"},
          {"deployment", {{"engine", "vllm"}, {"engine_version", "0.8.0"}, {"gpus", 1}, {"tp", 1}}},
          {"workload",
           {{"kind", "closed_loop"},
            {"concurrency", 1},
            {"num_requests", 8},
            {"input_tokens", {{"dist", "fixed"}, {"value", 512}}},
            {"output_tokens", {{"dist", "fixed"}, {"value", 128}}}}}};
}

// An overlay that sets only the named terms (everything else at its prior).
nlohmann::json TruthOverlay(const std::vector<std::pair<std::string, double>>& terms) {
  sim::CalibrationOverlay o;
  o.engine = "vllm", o.hardware = "h200-sxm", o.model = "llama-3.1-8b";
  for (const auto& [name, v] : terms) {
    sim::OverlayTerm t;
    t.name = name;
    t.kind = name == "kv_capacity_scale" ? sim::OverlayTermKind::kKvCapacityScale
                                         : sim::OverlayTermKind::kStepCost;
    t.prior = name == "kv_capacity_scale" ? 1 : 0;
    t.value = v;
    t.moved = true;
    o.terms.push_back(t);
  }
  // The parser resolves a step cost's key from its name.
  return sim::CalibrationOverlayToJson(o);
}

std::map<std::string, double> Simulate(nlohmann::json sc, int concurrency,
                                       const nlohmann::json* overlay) {
  sc["workload"]["concurrency"] = concurrency;
  sc["workload"]["num_requests"] = 4 * concurrency;
  if (overlay != nullptr) sc["calibration"] = *overlay;
  auto parsed = sim::ParseScenario(sc, "synthetic.json");
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  auto run = sim::RunScenario(**parsed, {});
  EXPECT_TRUE(run.ok()) << run.status().message();
  const nlohmann::json s = schema::ToJson(run->summary);
  std::map<std::string, double> m;
  for (const char* k : {"output_throughput", "mean_ttft_ms", "mean_tpot_ms"}) m[k] = s.at(k);
  m["kv_capacity_tokens"] = s.at("kv_capacity_tokens");
  return m;
}

// A validation case of runs at `concurrencies`, measured = the simulator
// with `truth`; `kv_row` adds the start-up line's KV capacity.
std::string WriteCase(const std::string& name, const std::vector<int>& concurrencies,
                      const nlohmann::json& truth, bool kv_row) {
  nlohmann::json c = {{"format", "capplan.validation_case.v1"},
                      {"name", name},
                      {"class", "serving"},
                      {"predict", "simulate"},
                      {"description", "synthetic runs for the fit's tests"},
                      {"source",
                       {{"url", "https://example.invalid/synthetic"},
                        {"date", "2026-12-07"},
                        {"title", "synthetic runs"},
                        {"note", "the simulator with a known overlay"}}},
                      {"scenario", BaseScenario()},
                      {"rows", nlohmann::json::array()}};
  for (int conc : concurrencies) {
    const auto m = Simulate(BaseScenario(), conc, &truth);
    c["rows"].push_back({{"label", "c=" + std::to_string(conc)},
                         {"set", {{"workload.concurrency", conc},
                                  {"workload.num_requests", 4 * conc}}},
                         {"measured",
                          {{"output_throughput", m.at("output_throughput")},
                           {"mean_ttft_ms", m.at("mean_ttft_ms")},
                           {"mean_tpot_ms", m.at("mean_tpot_ms")}}}});
  }
  if (kv_row) {
    const auto m = Simulate(BaseScenario(), concurrencies.front(), &truth);
    c["rows"].push_back({{"label", "capacity"},
                         {"set", {{"workload.concurrency", 1}, {"workload.num_requests", 1}}},
                         {"measured", {{"kv_capacity_tokens", m.at("kv_capacity_tokens")}}}});
  }
  const std::string path = test_util::TestTempPath(name + ".json");
  EXPECT_TRUE(WriteFileAtomic(path, DumpJson(c)).ok());
  return path;
}

const RunFitTerm* Term(const RunFitResult& r, const std::string& name) {
  for (const RunFitTerm& t : r.terms) {
    if (t.term.name == name) return &t;
  }
  return nullptr;
}

TEST(RunFit, RecoversAKnownHostTermAndKeepsWhatItCannotSee) {
  const nlohmann::json truth = TruthOverlay({{"host_s", 0.004}});
  const std::string c = WriteCase("host4ms", {1, 4, 16, 64}, truth, false);
  auto r = FitRuns({c});
  ASSERT_TRUE(r.ok()) << "status: " << r.status().ToString() << " | " << r.status().message();
  const RunFitTerm* host = Term(*r, "host_s");
  ASSERT_NE(host, nullptr);
  EXPECT_TRUE(host->term.moved) << FormatRunFit(*r);
  EXPECT_NEAR(host->term.value, 0.004, 0.0008) << FormatRunFit(*r);
  EXPECT_LT(r->fit_after_pct, r->fit_before_pct / 4) << FormatRunFit(*r);
  EXPECT_FALSE(r->refused) << FormatRunFit(*r);
  // No start-up KV line among the runs: the KV term keeps its prior, and says so.
  const RunFitTerm* kv = Term(*r, "kv_capacity_scale");
  ASSERT_NE(kv, nullptr);
  EXPECT_FALSE(kv->term.moved);
  EXPECT_EQ(kv->term.value, 1);
  EXPECT_NE(kv->term.why.find("no run has a start-up KV line"), std::string::npos);
  // A dense BF16 model runs no MoE kernel: its scale is not exercised.
  int not_exercised = 0;
  for (const RunFitTerm& t : r->terms) {
    if (t.term.why.find("not exercised") != std::string::npos) {
      EXPECT_FALSE(t.term.moved) << t.term.name;
      EXPECT_EQ(t.term.value, t.term.prior) << t.term.name;
      ++not_exercised;
    }
  }
  EXPECT_GT(not_exercised, 0) << FormatRunFit(*r);
  EXPECT_EQ(r->overlay.held_out_unit, "concurrency");
  EXPECT_LT(r->overlay.held_out_after_pct, r->overlay.held_out_before_pct);
}

TEST(RunFit, ReadsTheKvCapacityFromTheStartUpLine) {
  const nlohmann::json truth = TruthOverlay({{"kv_capacity_scale", 0.8}});
  const std::string c = WriteCase("kv08", {1, 16}, truth, true);
  auto r = FitRuns({c});
  ASSERT_TRUE(r.ok()) << "status: " << r.status().ToString() << " | " << r.status().message();
  const RunFitTerm* kv = Term(*r, "kv_capacity_scale");
  ASSERT_NE(kv, nullptr);
  EXPECT_TRUE(kv->term.moved);
  EXPECT_NEAR(kv->term.value, 0.8, 0.01);
}

TEST(RunFit, RefusesAnOverlayThatPredictsHeldOutRunsWorseAndNamesTheTerm) {
  // Two runs that disagree: one measured with 6 ms of host time per step,
  // one with none. A fit on either predicts the other worse than the prior.
  const std::string slow = WriteCase("slow", {8}, TruthOverlay({{"host_s", 0.006}}), false);
  const std::string fast = WriteCase("fast", {8}, TruthOverlay({{"host_s", 0.0}}), false);
  RunFitOptions opt;
  auto r = FitRuns({slow, fast}, opt);
  ASSERT_TRUE(r.ok()) << "status: " << r.status().ToString() << " | " << r.status().message();
  EXPECT_TRUE(r->refused) << FormatRunFit(*r);
  EXPECT_GT(r->overlay.held_out_after_pct, r->overlay.held_out_before_pct);
  ASSERT_FALSE(r->blame.empty());
  EXPECT_NE(r->refusal.find(r->blame), std::string::npos);
  EXPECT_NE(r->refusal.find("--hold"), std::string::npos);
  const RunFitTerm* blamed = Term(*r, r->blame);
  ASSERT_NE(blamed, nullptr);
  EXPECT_TRUE(blamed->term.moved);
}

TEST(RunFit, HoldKeepsATermAtItsPriorAndAnUnknownHoldIsAnError) {
  const std::string c = WriteCase("hold", {1, 16}, TruthOverlay({{"host_s", 0.004}}), false);
  RunFitOptions opt;
  opt.hold = {"host_s"};
  auto r = FitRuns({c}, opt);
  ASSERT_TRUE(r.ok()) << "status: " << r.status().ToString() << " | " << r.status().message();
  EXPECT_FALSE(Term(*r, "host_s")->term.moved);
  EXPECT_NE(Term(*r, "host_s")->term.why.find("--hold"), std::string::npos);
  opt.hold = {"host_secs"};
  auto bad = FitRuns({c}, opt);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("did you mean 'host_s'"), std::string::npos)
      << bad.status().message();
}

TEST(RunFit, OneRunHasNothingToHoldOutAndIsRefused) {
  const std::string c = WriteCase("one", {8}, TruthOverlay({{"host_s", 0.004}}), false);
  auto r = FitRuns({c});
  ASSERT_TRUE(r.ok()) << "status: " << r.status().ToString() << " | " << r.status().message();
  EXPECT_TRUE(r->refused);
  EXPECT_NE(r->refusal.find("nothing to hold out"), std::string::npos);
}

TEST(SelfCalibration, TwoRowsFittedPredictTheOthersAndTheTotalWeighsEachCase) {
  const nlohmann::json truth = TruthOverlay({{"host_s", 0.004}});
  const std::string path = WriteCase("self_cal", {1, 2, 4, 8}, truth, false);
  auto s = RunSelfCalibration({path});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->cases.size(), 1u);
  const SelfCalibrationCase& c = s->cases.front();
  // c=1 and c=8 fitted; c=2 and c=4 held out, three metrics each.
  EXPECT_EQ(c.held_metrics, 6);
  EXPECT_GT(c.before_pct, 5.0);
  EXPECT_LT(c.after_pct, c.before_pct / 4) << FormatSelfCalibration(*s);
  const SelfCalibrationCase all = Overall(*s);
  EXPECT_EQ(all.held_metrics, c.held_metrics);
  EXPECT_DOUBLE_EQ(all.before_pct, c.before_pct);
  EXPECT_NE(FormatSelfCalibration(*s).find("all cases: held-out rows"), std::string::npos);
  // Weighted by held-out metrics: a case of 2 at 10% and one of 6 at 30%.
  SelfCalibration two;
  two.cases.push_back({"a", 2, 10, 5, 5, ""});
  two.cases.push_back({"b", 6, 30, 20, 30, ""});
  const SelfCalibrationCase w = Overall(two);
  EXPECT_EQ(w.held_metrics, 8);
  EXPECT_DOUBLE_EQ(w.before_pct, 25);
  EXPECT_DOUBLE_EQ(w.after_pct, 16.25);
  EXPECT_DOUBLE_EQ(w.written_after_pct, 23.75);
}

}  // namespace
}  // namespace capplan::calibrate
