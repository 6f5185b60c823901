// Runs -> a validation case: the workload each client sent, the measured
// rows, the capacity row from the start-up log, and where it came from.
#include "calibrate/runs/case_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "calibrate/public_validation.h"
#include "calibrate/runs/run_file.h"

namespace capplan::calibrate::runs {
namespace {

std::string Data(const std::string& name) { return std::string(RUNS_DATA) + "/" + name; }

nlohmann::json BaseScenario() {
  return {{"model", "llama-3.1-8b"},
          {"hardware", "h100-sxm"},
          {"deployment", {{"engine", "sglang"}, {"gpus", 1}, {"tp", 1}, {"page_size", 1}}}};
}

TEST(CaseBuilder, WorkloadsAsTheClientsSentThem) {
  RunWorkload w;
  w.num_requests = 100;
  w.max_concurrency = 8;
  w.mean_input_tokens = 511.6;
  w.mean_output_tokens = 0.2;
  nlohmann::json j = WorkloadJson(w);
  EXPECT_EQ(j["kind"], "closed_loop");
  EXPECT_EQ(j["concurrency"], 8);
  EXPECT_EQ(j["client"], "lock_step");  // means are used as written
  EXPECT_EQ(j["input_tokens"], (nlohmann::json{{"dist", "fixed"}, {"value", 512}}));
  EXPECT_EQ(j["output_tokens"]["value"], 1);  // at least one token
  w.request_rate = 2.5;
  w.burstiness = std::numeric_limits<double>::infinity();
  w.arrival_convention = "vllm";
  w.input_lens = {3, 4};
  w.output_lens = {5, 6};
  j = WorkloadJson(w);
  EXPECT_EQ(j["kind"], "open_loop");
  EXPECT_EQ(j["request_rate"], 2.5);
  EXPECT_EQ(j["burstiness"], "inf");
  EXPECT_EQ(j["max_concurrency"], 8);
  EXPECT_EQ(j["arrival_convention"], "vllm");
  EXPECT_EQ(j["input_tokens"], (nlohmann::json{{"dist", "empirical"}, {"values", {3, 4}}}));
  RunWorkload r;
  r.num_requests = 10;
  r.random_input_len = 1000;
  r.random_output_len = 100;
  r.random_range_ratio = 0.5;
  j = WorkloadJson(r);
  EXPECT_EQ(j["kind"], "open_loop");
  EXPECT_EQ(j["request_rate"], "inf");
  EXPECT_EQ(
      j["input_tokens"],
      (nlohmann::json{
          {"dist", "uniform"}, {"value", 1000}, {"range_ratio", 0.5}, {"convention", "sglang"}}));
}

TEST(CaseBuilder, CaseRowsCapacityRowAndImportBlock) {
  auto runs = ReadRunFile(Data("sglang-bench-serving.jsonl"), "");
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  CaseInputs in;
  in.name = "my-case";
  in.run_file = "bench.jsonl";
  in.scenario = BaseScenario();
  in.runs = *runs;
  in.log_file = "server.log";
  auto log = ParseServerLog("mem_fraction_static=0.8\nmax_total_num_tokens=1234, x=1\n", "s");
  ASSERT_TRUE(log.ok()) << log.status().message();
  in.log = *log;
  auto c = BuildCase(in);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const nlohmann::json& j = *c;
  EXPECT_EQ(j["format"], "capplan.validation_case.v1");
  EXPECT_EQ(j["class"], "serving");
  EXPECT_EQ(j["scenario"]["name"], "my-case");
  EXPECT_EQ(j["scenario"]["deployment"]["mem_fraction_static"], 0.8);  // from the log
  EXPECT_EQ(j["scenario"]["workload"]["concurrency"], 8);
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_FALSE(j["rows"][0].contains("set"));  // the scenario's own workload
  EXPECT_EQ(j["rows"][1]["set"]["workload"]["concurrency"], 32);
  EXPECT_EQ(j["rows"][1]["measured"]["mean_e2el_ms"], 1455.9);
  EXPECT_EQ(j["rows"][2]["measured"]["kv_capacity_tokens"], 1234);
  EXPECT_NE(j["rows"][2]["note"].get<std::string>().find("max_total_num_tokens=1234"),
            std::string::npos);
  EXPECT_EQ(j["source"]["url"], "https://github.com/sgl-project/sglang");
  EXPECT_EQ(j["source"]["date"], "not recorded");
  EXPECT_EQ(j["import"]["tool_version"], "not recorded");
  EXPECT_EQ(j["import"]["server_log"]["kv_tokens"], 1234);
  EXPECT_EQ(j["import"]["server_log"]["file"], "server.log");
  // Every measured key is one the validation compares.
  const auto& allowed = ValidationCaseMetrics();
  for (const auto& row : j["rows"]) {
    for (const auto& [k, v] : row["measured"].items()) {
      EXPECT_NE(std::find(allowed.begin(), allowed.end(), k), allowed.end()) << k;
    }
  }
}

TEST(CaseBuilder, RunWithNothingToCompareIsAnError) {
  ImportedRun r;
  r.label = "empty";
  r.workload.num_requests = 1;
  r.notes = {"'mean_ttft_ms' is not > 0: mean_ttft_ms not compared"};
  CaseInputs in;
  in.name = "c";
  in.run_file = "r.json";
  in.scenario = BaseScenario();
  in.runs = {r};
  auto c = BuildCase(in);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "r.json: run 'empty' has no metric > 0 to compare ('mean_ttft_ms' "
            "is not > 0: mean_ttft_ms not compared)");
}

TEST(CaseBuilder, BlocksNeedThePageSize) {
  auto runs = ReadRunFile(Data("vllm-bench-serve.json"), "");
  ASSERT_TRUE(runs.ok());
  CaseInputs in;
  in.name = "c";
  in.run_file = "r.json";
  in.scenario = BaseScenario();
  in.runs = *runs;
  auto log = ParseServerLog("# GPU blocks: 500, # CPU blocks: 10\n", "s");
  ASSERT_TRUE(log.ok());
  in.log = *log;
  auto with_page = BuildCase(in);
  ASSERT_TRUE(with_page.ok());
  EXPECT_EQ(with_page->at("rows").back()["measured"]["kv_capacity_tokens"], 500);
  in.scenario["deployment"].erase("page_size");
  auto without = BuildCase(in);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(without->at("rows").size(), 1u);  // no capacity row: page size unknown
}

TEST(CaseBuilder, ScenarioFromFlagsAndTheFilesDeployment) {
  auto runs = ReadRunFile(Data("inferencex-agg.json"), "");
  ASSERT_TRUE(runs.ok());
  DeploymentFlags f;
  f.model = "llama-3.1-8b";
  f.hardware = "h100-sxm";
  auto s = ScenarioFromFlags(f, (*runs)[0]);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ((*s)["deployment"]["engine"], "vllm");  // the file's framework
  EXPECT_EQ((*s)["deployment"]["tp"], 1);
  EXPECT_EQ((*s)["deployment"]["gpus"], 1);
  f.tp = 2;
  f.engine = "sglang";
  s = ScenarioFromFlags(f, (*runs)[0]);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)["deployment"]["tp"], 2);  // flags win
  EXPECT_EQ((*s)["deployment"]["engine"], "sglang");
  auto vllm = ReadRunFile(Data("vllm-bench-serve.json"), "");
  ASSERT_TRUE(vllm.ok());
  DeploymentFlags g = f;
  g.tp.reset();
  auto no_tp = ScenarioFromFlags(g, (*vllm)[0]);
  ASSERT_FALSE(no_tp.ok());
  EXPECT_EQ(no_tp.status().message(),
            "import-run: missing --tp (the tensor-parallel size the "
            "engine ran with); or give --scenario SCENARIO.json");
  g = f;
  g.model.clear();
  EXPECT_FALSE(ScenarioFromFlags(g, (*vllm)[0]).ok());
}

}  // namespace
}  // namespace capplan::calibrate::runs
