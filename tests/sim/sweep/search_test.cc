#include "sim/sweep/search.h"

#include <filesystem>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "common/json_util.h"
#include "sim/sweep/search_report.h"
#include "tests/sim/sweep/fake_sim.h"
#include "tests/test_util/temp_dir.h"

namespace capplan::sim::sweep {
namespace {

using testing::CountingRunner;
using testing::FakeBase;

// Hand-checked space over the analytic model in fake_sim.h, with SLOs
// p90 TTFT <= 250 ms (u <= 0.6) and p90 TPOT <= 30 ms:
//   tp=1: pruned by the fake memory check ("weights need ...").
//   tp=3: invalid (does not divide 64 heads).
//   tp=4, replicas=2: 8 GPUs > max_total_gpus=4.
//   tp=2 (C=4 req/s): TPOT 20/(1-u) <= 30 -> u <= 1/3 binds before TTFT:
//       replicas=1 -> 4/3 req/s, replicas=2 -> 8/3 req/s; 66.7 tok/s/gpu.
//   tp=4, replicas=1 (C=10): TPOT allows u <= 2/3, TTFT u <= 0.6 binds:
//       6 req/s, 600 tok/s over 4 GPUs = 150 tok/s/gpu, $3.70/M tokens.
constexpr char kSpace[] = R"({
  "axes": {"deployment.tp": [1, 2, 3, 4], "deployment.replicas": [1, 2]},
  "request_rate": {"path": "workload.request_rate", "min_req_per_s": 0.1,
                   "max_req_per_s": 100, "rel_tol": 0.01},
  "max_total_gpus": 4,
  "top_n": 3
})";

PointPruner FakePruner() {
  return [](const nlohmann::json& doc) -> Result<PruneVerdict> {
    PruneVerdict v;
    const int tp = doc["deployment"]["tp"].get<int>();
    v.gpus = tp * doc["deployment"]["replicas"].get<int>();
    if (tp == 1) v.reason = "weights need 150.0 GiB per GPU but only 141.0 GiB";
    return v;
  };
}

Result<SearchResult> Search(const std::string& objective, std::vector<std::string> slos,
                            CountingRunner* runner, const char* space_text = kSpace) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json space_doc, ParseJson(space_text, "space.json"));
  CAPPLAN_ASSIGN_OR_RETURN(SearchSpace space, ParseSearchSpace(space_doc, "space.json"));
  SearchOptions o;
  CAPPLAN_ASSIGN_OR_RETURN(o.objective, ParseObjective(objective));
  for (const auto& s : slos) {
    CAPPLAN_ASSIGN_OR_RETURN(Slo slo, ParseSlo(s));
    o.slos.push_back(slo);
  }
  o.jobs = 2;
  SimHooks hooks = runner->Hooks();
  hooks.prune = FakePruner();
  return RunSearch(FakeBase(), "fake.json", space, o, hooks);
}

std::string Config(const FeasibleConfig& f) { return CanonicalPointJson(f.grid); }

int Val(const GridAssignment& grid, const std::string& path) {
  for (const auto& [p, v] : grid) {
    if (p == path) return v.get<int>();
  }
  return -1;
}

TEST(SearchTest, FindsTheHandCheckedOptimum) {
  CountingRunner runner;
  auto r = Search("output_throughput_per_gpu", {"ttft_p90_ms<=250", "tpot_p90_ms<=30"}, &runner);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->configs, 8);
  ASSERT_EQ(r->ranked.size(), 3u);
  const FeasibleConfig& w = r->ranked[0];
  EXPECT_EQ(Config(w), R"({"deployment.replicas":1,"deployment.tp":4})");
  EXPECT_LE(w.rate, 6.0);
  EXPECT_GE(w.rate, 6.0 * 0.99);
  EXPECT_NEAR(w.output_throughput_per_gpu, 150, 1.5);
  EXPECT_EQ(w.binding["kind"], "slo");
  ASSERT_EQ(w.binding["slos"].size(), 1u);
  EXPECT_EQ(w.binding["slos"][0]["slo"], "ttft_p90_ms<=250");
  // The tp=2 configurations are TPOT-bound at u = 1/3.
  for (size_t i = 1; i < 3; ++i) {
    const FeasibleConfig& f = r->ranked[i];
    EXPECT_EQ(Val(f.grid, "deployment.tp"), 2);
    const double expect_rate = Val(f.grid, "deployment.replicas") * 4.0 / 3.0;
    EXPECT_LE(f.rate, expect_rate);
    EXPECT_GE(f.rate, expect_rate * 0.99);
    EXPECT_EQ(f.binding["slos"][0]["slo"], "tpot_p90_ms<=30");
  }
  // Pareto: tp=4 dominates both tp=2 points (more tokens/s/gpu and /user).
  ASSERT_EQ(r->pareto.size(), 1u);
  EXPECT_EQ(r->pareto[0], 0);
  // Pruned with their reasons (axes sort by path: replicas outer, tp inner);
  // nothing pruned was simulated.
  ASSERT_EQ(r->pruned.size(), 5u);
  std::map<std::string, int> stages;
  for (const auto& p : r->pruned) {
    ++stages[p.stage];
    const int tp = Val(p.grid, "deployment.tp");
    if (tp == 1) {
      EXPECT_EQ(p.stage, "cheap_check");
      EXPECT_NE(p.reason.find("weights need"), std::string::npos);
    } else if (tp == 3) {
      EXPECT_EQ(p.stage, "invalid");
      EXPECT_NE(p.reason.find("does not divide"), std::string::npos);
    } else {
      EXPECT_EQ(tp, 4);
      EXPECT_EQ(Val(p.grid, "deployment.replicas"), 2);
      EXPECT_EQ(p.stage, "gpu_budget");
      EXPECT_EQ(p.reason, "uses 8 GPUs, more than max_total_gpus=4");
    }
  }
  EXPECT_EQ(stages["cheap_check"], 2);
  EXPECT_EQ(stages["invalid"], 2);
  EXPECT_EQ(r->pruned[0].index, 0);  // space order: (replicas 1, tp 1) first
  EXPECT_EQ(r->simulations, runner.calls.load());
  EXPECT_LE(r->simulations, 3 * 14);
}

TEST(SearchTest, ObjectivesRankDifferently) {
  CountingRunner a, b;
  auto gpus = Search("gpus", {"ttft_p90_ms<=250", "tpot_p90_ms<=30"}, &a);
  ASSERT_TRUE(gpus.ok());
  EXPECT_EQ(Config(gpus->ranked[0]), R"({"deployment.replicas":1,"deployment.tp":2})");
  // Equal GPU counts (tp=4 x1 and tp=2 x2): more throughput per GPU first.
  EXPECT_EQ(Config(gpus->ranked[1]), R"({"deployment.replicas":1,"deployment.tp":4})");
  auto cost = Search("cost_per_million_output_tokens", {"ttft_p90_ms<=250", "tpot_p90_ms<=30"},
                     &b);
  ASSERT_TRUE(cost.ok());
  EXPECT_EQ(Config(cost->ranked[0]), R"({"deployment.replicas":1,"deployment.tp":4})");
  EXPECT_NEAR(cost->ranked[0].objective, 8.0 / (600 * 3600) * 1e6, 0.05);
  auto bad = ParseObjective("cost_per_million_output_token");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("did you mean 'cost_per_million_output_tokens'"),
            std::string::npos);
}

// Energy objectives: tokens per provisioned MW is maximized, joules per
// output token minimized; both pick the most productive GPUs here.
TEST(SearchTest, EnergyObjectivesRankByPower) {
  CountingRunner runner;
  const std::vector<std::string> slos = {"ttft_p90_ms<=250", "tpot_p90_ms<=30"};
  auto per_gpu = Search("output_throughput_per_gpu", slos, &runner);
  auto mw = Search("output_tokens_per_s_per_mw", slos, &runner);
  auto joules = Search("joules_per_output_token", slos, &runner);
  ASSERT_TRUE(per_gpu.ok() && mw.ok() && joules.ok());
  EXPECT_EQ(Config(mw->ranked[0]), Config(per_gpu->ranked[0]));
  EXPECT_NEAR(mw->ranked[0].objective, per_gpu->ranked[0].objective * 1e3, 1e-6);
  EXPECT_GT(mw->ranked[0].objective, mw->ranked[1].objective);
  EXPECT_EQ(Config(joules->ranked[0]), Config(per_gpu->ranked[0]));
  EXPECT_NEAR(joules->ranked[0].objective, 700.0 / per_gpu->ranked[0].objective, 1e-9);
  EXPECT_LT(joules->ranked[0].objective, joules->ranked[1].objective);
}

TEST(SearchTest, UnreachableSlosAreExplained) {
  CountingRunner runner;
  // TPOT <= 15 ms: tp=2 has 20 ms at zero load, so it fails at any rate;
  // tp=4 holds up to u = 1/3 (3.33 req/s).
  auto r = Search("output_throughput_per_gpu", {"tpot_p90_ms<=15"}, &runner);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->ranked.size(), 1u);
  EXPECT_NEAR(r->ranked[0].rate, 10.0 / 3.0, 0.04);
  int slo_pruned = 0;
  for (const auto& p : r->pruned) {
    if (p.stage != "slo") continue;
    ++slo_pruned;
    EXPECT_NE(p.reason.find("tpot_p90_ms<=15 but got 20"), std::string::npos) << p.reason;
  }
  EXPECT_EQ(slo_pruned, 2);
}

TEST(SearchTest, RangeBoundIsReportedAsBinding) {
  CountingRunner runner;
  auto r = Search("gpus", {"ttft_p90_ms<=100000"}, &runner, R"({
    "axes": {"deployment.tp": [4]},
    "request_rate": {"min_req_per_s": 0.5, "max_req_per_s": 2}})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->ranked.size(), 1u);
  EXPECT_EQ(r->ranked[0].rate, 2);
  EXPECT_EQ(r->ranked[0].binding["kind"], "rate_range");
  EXPECT_EQ(runner.calls.load(), 1);
}

TEST(SearchTest, WritesJsonCsvAndTable) {
  CountingRunner runner;
  auto r = Search("output_throughput_per_gpu", {"ttft_p90_ms<=250", "tpot_p90_ms<=30"}, &runner);
  ASSERT_TRUE(r.ok());
  const std::string dir = test_util::TestTempPath("search");
  ASSERT_TRUE(WriteSearchOutputs(*r, dir).ok());
  auto j = ReadJsonFile(dir + "/search.json");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["winner"]["config"]["deployment.tp"], 4);
  EXPECT_EQ((*j)["top"].size(), 3u);
  EXPECT_EQ((*j)["pareto"].size(), 1u);
  EXPECT_EQ((*j)["pruned_configs"].size(), 5u);
  const std::string csv = ReadFile(dir + "/pruned.csv").value();
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "point_id,deployment.replicas,deployment.tp,stage,reason");
  EXPECT_NE(csv.find(",2,4,gpu_budget,\"uses 8 GPUs, more than max_total_gpus=4\""),
            std::string::npos)
      << csv;
  std::ostringstream os;
  PrintSearchReport(*r, os);
  const std::string out = os.str();
  EXPECT_NE(out.find("Binding constraint: ttft_p90_ms<=250"), std::string::npos) << out;
  EXPECT_NE(out.find("| Rank | tokens/s/gpu |"), std::string::npos) << out;
  EXPECT_NE(out.find("Pareto set"), std::string::npos);
}

// A sizing question on the analytic model at one fixed rate, 3 req/s, under
// p90 TTFT <= 250 ms (u <= 0.6): tp=2 (C=4) fails on one replica (u=0.75)
// and passes on two (u=0.375); tp=4 (C=10) passes on one (u=0.3). The
// smallest passing tp is 4 for one replica and 2 for two.
constexpr char kFixedSpace[] = R"({
  "axes": {"deployment.tp": [2, 4], "deployment.replicas": [1, 2]},
  "request_rate": {"fixed_per_s": 3},
  "smallest_passing": "deployment.tp"
})";

TEST(SearchTest, FixedRateSimulatesEachConfigurationOnce) {
  CountingRunner runner;
  auto r = Search("cost_per_million_output_tokens", {"ttft_p90_ms<=250"}, &runner, kFixedSpace);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(runner.calls.load(), 4);
  ASSERT_EQ(r->ranked.size(), 3u);
  for (const FeasibleConfig& f : r->ranked) {
    EXPECT_EQ(f.rate, 3);
    EXPECT_EQ(f.binding["kind"], "fixed_rate");
    EXPECT_EQ(f.binding_text, "none of the SLOs: they hold at the fixed rate 3 req/s");
  }
  ASSERT_EQ(r->pruned.size(), 1u);
  EXPECT_EQ(r->pruned[0].stage, "slo");
  EXPECT_EQ(r->pruned[0].reason.rfind("SLOs not met at the fixed rate 3 req/s: ", 0), 0u)
      << r->pruned[0].reason;
}

TEST(SearchTest, ReportsTheSmallestPassingValuePerSettingOfTheOtherAxes) {
  CountingRunner runner;
  auto r = Search("cost_per_million_output_tokens", {"ttft_p90_ms<=250"}, &runner, kFixedSpace);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->smallest_passing_axis, "deployment.tp");
  ASSERT_EQ(r->smallest_passing.size(), 2u);
  const SmallestPassing& one = r->smallest_passing[0];
  const SmallestPassing& two = r->smallest_passing[1];
  EXPECT_EQ(CanonicalPointJson(one.others), R"({"deployment.replicas":1})");
  EXPECT_EQ(one.value, 4);
  ASSERT_GE(one.ranked_index, 0);
  EXPECT_EQ(Config(r->ranked[one.ranked_index]), R"({"deployment.replicas":1,"deployment.tp":4})");
  EXPECT_EQ(CanonicalPointJson(two.others), R"({"deployment.replicas":2})");
  EXPECT_EQ(two.value, 2);  // tp=4 also passes on two replicas; 2 is listed first
  const nlohmann::json j = SearchJson(*r);
  EXPECT_EQ(j["fixed_rate"], true);
  EXPECT_EQ(j["smallest_passing"]["axis"], "deployment.tp");
  EXPECT_EQ(j["smallest_passing"]["rows"][1]["value"], 2);
  EXPECT_EQ(j["smallest_passing"]["rows"][1]["configuration"]["gpus"], 4);
  std::ostringstream os;
  PrintSearchReport(*r, os);
  EXPECT_NE(os.str().find("Smallest tp meeting every SLO"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("| replicas=1 | 4  |"), std::string::npos) << os.str();
  // The space's order says which value is smallest, not the ranking: listed
  // [4, 2], tp=4 is the first to pass on two replicas though tp=2 costs less.
  std::string reversed = kFixedSpace;
  const std::string tps = "[2, 4]";
  reversed.replace(reversed.find(tps), tps.size(), "[4, 2]");
  auto rev = Search("cost_per_million_output_tokens", {"ttft_p90_ms<=250"}, &runner,
                    reversed.c_str());
  ASSERT_TRUE(rev.ok()) << rev.status().message();
  ASSERT_EQ(rev->smallest_passing.size(), 2u);
  EXPECT_EQ(rev->smallest_passing[1].value, 4);
  const FeasibleConfig& first = rev->ranked[rev->smallest_passing[1].ranked_index];
  EXPECT_EQ(Config(first), R"({"deployment.replicas":2,"deployment.tp":4})");
  for (const FeasibleConfig& f : rev->ranked) {
    if (Config(f) == R"({"deployment.replicas":2,"deployment.tp":2})") {
      EXPECT_LT(f.objective, first.objective);
    }
  }
}

TEST(SearchTest, SmallestPassingSaysWhenNoValuePasses) {
  CountingRunner runner;
  // 30 req/s overloads every configuration (u >= 1.5).
  std::string space = kFixedSpace;
  const std::string fixed = "\"fixed_per_s\": 3";
  space.replace(space.find(fixed), fixed.size(), fixed + "0");
  auto r = Search("cost_per_million_output_tokens", {"ttft_p90_ms<=250"}, &runner, space.c_str());
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->smallest_passing.size(), 2u);
  EXPECT_TRUE(r->smallest_passing[0].value.is_null());
  EXPECT_EQ(r->smallest_passing[0].ranked_index, -1);
  std::ostringstream os;
  PrintSearchReport(*r, os);
  EXPECT_NE(os.str().find("| replicas=1 | none passes |"), std::string::npos) << os.str();
}

TEST(SearchSpaceTest, SessionRateIsInSessionsPerSecond) {
  EXPECT_STREQ(RateUnit("workload.session_rate"), "sessions/s");
  EXPECT_STREQ(RateUnit("session_rate"), "sessions/s");
  EXPECT_STREQ(RateUnit("workload.request_rate"), "req/s");
  EXPECT_STREQ(RateUnit("workload.max_session_rate"), "req/s");
}

TEST(SearchSpaceTest, RejectsBadSizingSpaces) {
  auto parse = [](const char* text) {
    return ParseSearchSpace(nlohmann::json::parse(text), "space.json");
  };
  auto both = parse(R"({"axes": {}, "request_rate": {"fixed_per_s": 1, "max_req_per_s": 2}})");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("/request_rate/max_req_per_s: give fixed_per_s"),
            std::string::npos)
      << both.status().message();
  auto zero = parse(R"({"axes": {}, "request_rate": {"fixed_per_s": 0}})");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("/request_rate/fixed_per_s"), std::string::npos);
  auto typo = parse(R"({"axes": {"deployment.kv_tiers": [[]], "deployment.replicas": [1]},
                        "request_rate": {"fixed_per_s": 1},
                        "smallest_passing": "deployment.kv_tier"})");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("/smallest_passing: 'deployment.kv_tier' is not one of "
                                         "the axes (name the axis whose values are listed "
                                         "smallest first); did you mean 'deployment.kv_tiers'?"),
            std::string::npos)
      << typo.status().message();
  auto ok = parse(R"({"axes": {"deployment.replicas": [1, 2]},
                      "request_rate": {"path": "workload.session_rate", "fixed_per_s": 0.5},
                      "smallest_passing": "deployment.replicas"})");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(ok->fixed_rate());
  EXPECT_EQ(ok->rate_min, 0.5);
  EXPECT_EQ(ok->smallest_passing, "deployment.replicas");
}

TEST(SearchSpaceTest, RejectsBadSpaces) {
  auto parse = [](const char* text) {
    return ParseSearchSpace(nlohmann::json::parse(text), "space.json");
  };
  auto no_rate = parse(R"({"axes": {"deployment.tp": [2]}})");
  ASSERT_FALSE(no_rate.ok());
  EXPECT_NE(no_rate.status().message().find("request_rate"), std::string::npos);
  auto typo = parse(R"({"axes": {}, "request_rate": {"min_req_per_s": 1, "max_req_per_s": 2},
                        "max_total_gpu": 8})");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("did you mean 'max_total_gpus'"), std::string::npos)
      << typo.status().message();
  auto empty = parse(R"({"axes": {"deployment.tp": []},
                         "request_rate": {"min_req_per_s": 1, "max_req_per_s": 2}})");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("/axes/deployment.tp"), std::string::npos);
  auto inverted = parse(R"({"axes": {}, "request_rate": {"min_req_per_s": 5,
                                                          "max_req_per_s": 2}})");
  EXPECT_FALSE(inverted.ok());
}

TEST(SearchSpaceTest, RatePathMustExistInTheScenario) {
  CountingRunner runner;
  auto r = Search("gpus", {"ttft_p90_ms<=250"}, &runner, R"({
    "axes": {"deployment.tp": [4]},
    "request_rate": {"path": "workload.rate", "min_req_per_s": 0.5, "max_req_per_s": 2}})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/request_rate/path"), std::string::npos);
  EXPECT_NE(r.status().message().find("/workload/rate: unknown field"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace capplan::sim::sweep
