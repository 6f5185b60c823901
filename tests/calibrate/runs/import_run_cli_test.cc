// `capplan import-run` -> `capplan validate CASE.json` as a user runs them,
// on the hand-written result files of every supported tool; the errors a
// user meets are one line and leave no case behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/test_util/shell.h"

namespace capplan::calibrate::runs {
namespace {

using test_util::ReadText;
using test_util::Sh;

std::string Bin() { return std::string(CAPPLAN_BIN); }
std::string Data(const std::string& name) { return std::string(RUNS_DATA) + "/" + name; }
std::string Scenario() { return Data("scenario-llama-3.1-8b-h100-vllm.json"); }

// Imports `args`, validates the case it wrote, and returns validate's JSON.
nlohmann::json RoundTrip(const std::string& args, const std::string& name,
                         std::string* import_out) {
  const std::string out = test_util::TestTempPath(name + ".json");
  EXPECT_EQ(Sh(Bin() + " import-run " + args + " --out " + out, import_out), 0) << *import_out;
  std::string table;
  EXPECT_EQ(Sh(Bin() + " validate " + out, &table), 0) << table;
  EXPECT_NE(table.find("validation: 1 case file(s)"), std::string::npos) << table;
  std::string js;
  EXPECT_EQ(Sh(Bin() + " validate " + out + " --json 2>/dev/null", &js), 0) << js;
  return nlohmann::json::parse(js, nullptr, false);
}

// Every measured metric of the case came back with a finite prediction.
void ExpectRowsRan(const nlohmann::json& v, size_t rows) {
  ASSERT_TRUE(v.is_object() && v.contains("rows")) << v.dump().substr(0, 500);
  EXPECT_EQ(v["rows"].size(), rows);
  for (const auto& r : v["rows"]) {
    EXPECT_FALSE(r.contains("skipped") && !r["skipped"].get<std::string>().empty()) << r.dump();
    EXPECT_GT(r["predicted"].get<double>(), 0) << r.dump();
  }
}

TEST(ImportRunCli, VllmWithLogAndScrape) {
  std::string out;
  const nlohmann::json v =
      RoundTrip(Data("vllm-bench-serve.json") + " --scenario " + Scenario() + " --log " +
                    Data("vllm-server.log") + " --metrics " + Data("vllm-metrics.txt"),
                "vllm", &out);
  EXPECT_NE(out.find("server log " + Data("vllm-server.log") +
                     ": vllm 0.10.1, 6 lines read, engine KV pool 438192 tokens"),
            std::string::npos)
      << out;
  ExpectRowsRan(v, 13);  // 12 benchmark metrics + the KV pool
  const auto& cap = v["rows"][12];
  EXPECT_EQ(cap["metric"], "kv_capacity_tokens");
  EXPECT_EQ(cap["measured"], 438192.0);
  const nlohmann::json c = nlohmann::json::parse(ReadText(test_util::TestTempPath("vllm.json")));
  EXPECT_EQ(c["import"]["metrics_scrape"]["prompt_tokens_total"], 163840.0);
  EXPECT_EQ(c["import"]["server_log"]["stats_lines"]["max_running_requests"], 16);
}

TEST(ImportRunCli, VllmDetailedPerRequestLengths) {
  std::string out;
  const nlohmann::json v = RoundTrip(
      Data("vllm-bench-serve-detailed.json") + " --scenario " + Scenario(), "detailed", &out);
  EXPECT_NE(out.find("\"dist\":\"empirical\",\"values\":[120,342,88,201,97,192,64]"),
            std::string::npos)
      << out;
  ExpectRowsRan(v, 19);
}

TEST(ImportRunCli, SglangLinesFromDeploymentFlags) {
  std::string out;
  const nlohmann::json v = RoundTrip(Data("sglang-bench-serving.jsonl") +
                                         " --model llama-3.1-8b --gpu h100-sxm --engine sglang "
                                         "--engine-version 0.4.5 --tp 1 --log " +
                                         Data("sglang-server.log"),
                                     "sglang", &out);
  // 16 metrics a run (bench_serving writes a p95 ITL too), then the KV row.
  ExpectRowsRan(v, 16 + 16 + 1);
  EXPECT_EQ(v["rows"][16]["row"], "run 2 c=32");
  EXPECT_EQ(v["rows"][32]["measured"], 456891.0);
}

TEST(ImportRunCli, GuidellmAndInferencex) {
  std::string out;
  ExpectRowsRan(
      RoundTrip(Data("guidellm-benchmarks.json") + " --scenario " + Scenario(), "guidellm", &out),
      40);
  ExpectRowsRan(RoundTrip(Data("inferencex-agg.json") +
                              " --model llama-3.1-8b --gpu h100-sxm --engine-version 0.8.0",
                          "inferencex", &out),
                14);
  EXPECT_NE(out.find("note: num_requests = 10 x conc"), std::string::npos) << out;
}

TEST(ImportRunCli, ErrorsAreOneLineAndWriteNothing) {
  const std::string out = test_util::TestTempPath("never.json");
  const std::string bad = test_util::WriteTemp("bad.json", "{\"completed\": 3}\n");
  struct Case {
    std::string args, expect;
  };
  const Case cases[] = {
      {bad + " --scenario " + Scenario(),
       "capplan: error: " + bad +
           ": not a benchmark result capplan knows: expected the key "
           "'total_token_throughput'"},
      {bad + " --format vllm --scenario " + Scenario(),
       "capplan: error: " + bad +
           ": /num_prompts: required field is missing (as `vllm bench "
           "serve --save-result` writes it"},
      {Data("vllm-bench-serve.json"),
       "capplan: error: import-run: missing --model (a model card name or path, models/cards/); "
       "or give --scenario SCENARIO.json"},
      {Data("vllm-bench-serve.json") + " --scenario " + Scenario() + " --tp 2",
       "capplan: error: import-run: --tp goes without --scenario"},
      {Data("vllm-bench-serve.json") + " --scenario " + Scenario() + " --log " + bad,
       "capplan: error: " + bad + ": no engine line found"},
  };
  for (const Case& c : cases) {
    std::string log;
    EXPECT_NE(Sh(Bin() + " import-run " + c.args + " --out " + out, &log), 0) << c.args;
    EXPECT_NE(log.find(c.expect), std::string::npos) << log;
    EXPECT_EQ(log.find("capplan: error:"), log.rfind("capplan: error:")) << log;
    EXPECT_FALSE(std::filesystem::exists(out)) << c.args;
  }
  std::string log;
  EXPECT_NE(Sh(Bin() + " import-run " + Data("vllm-bench-serve.json"), &log), 0);
  EXPECT_NE(log.find("import-run: missing --out CASE.json"), std::string::npos) << log;
}

TEST(ImportRunCli, ValidateTakesSeveralCasesAndRefusesProfile) {
  std::string log;
  const std::string a = test_util::TestTempPath("a.json");
  ASSERT_EQ(Sh(Bin() + " import-run " + Data("inferencex-agg.json") +
                   " --model llama-3.1-8b --gpu h100-sxm --out " + a,
               &log),
            0)
      << log;
  const std::string pub =
      std::string(CAPPLAN_SOURCE_DIR) + "/validation/cases/s2-vllm-latency-h100.json";
  ASSERT_EQ(Sh(Bin() + " validate " + a + " " + pub, &log), 0) << log;
  EXPECT_NE(log.find("validation: 2 case file(s)"), std::string::npos) << log;
  EXPECT_NE(log.find("s2-vllm-latency-h100"), std::string::npos) << log;
  EXPECT_NE(Sh(Bin() + " validate " + a + " --profile h200-sxm", &log), 0);
  EXPECT_NE(log.find("a validation case names its own hardware profile"), std::string::npos) << log;
}

}  // namespace
}  // namespace capplan::calibrate::runs
