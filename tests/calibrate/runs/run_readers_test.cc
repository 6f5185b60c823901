// Each result reader on a file written in its tool's exact shape
// (tests/data/runs/README.md names the tool versions): the metrics under
// capplan's names, the workload the client sent, what the file lacks noted.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "calibrate/runs/run_file.h"

namespace capplan::calibrate::runs {
namespace {

std::string Data(const std::string& name) { return std::string(RUNS_DATA) + "/" + name; }

std::map<std::string, double> Metrics(const ImportedRun& r) {
  std::map<std::string, double> m;
  for (const auto& [k, v] : r.measured) m[k] = v;
  return m;
}

bool HasNote(const ImportedRun& r, const std::string& part) {
  for (const std::string& n : r.notes) {
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(RunReaders, VllmBenchServeSaveResult) {
  auto runs = ReadRunFile(Data("vllm-bench-serve.json"), "auto");
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->size(), 1u);
  const ImportedRun& r = (*runs)[0];
  EXPECT_EQ(r.format, "vllm");
  EXPECT_EQ(r.date, "2026-11-30");
  EXPECT_EQ(r.model_id, "meta-llama/Llama-3.1-8B-Instruct");
  const auto m = Metrics(r);
  EXPECT_DOUBLE_EQ(m.at("output_throughput"), 1699.6);
  EXPECT_DOUBLE_EQ(m.at("total_token_throughput"), 15296.3);
  EXPECT_DOUBLE_EQ(m.at("p99_ttft_ms"), 121.7);
  EXPECT_DOUBLE_EQ(m.at("median_itl_ms"), 8.71);
  EXPECT_EQ(m.count("mean_e2el_ms"), 0u);  // not in the default --percentile-metrics
  EXPECT_EQ(m.count("p90_ttft_ms"), 0u);   // the default --metric-percentiles is 99
  EXPECT_TRUE(HasNote(r, "'mean_e2el_ms' is absent"));
  EXPECT_EQ(r.workload.num_requests, 160);
  EXPECT_EQ(r.workload.max_concurrency, 16);
  EXPECT_FALSE(r.workload.request_rate.has_value());  // "inf"
  EXPECT_DOUBLE_EQ(r.workload.mean_input_tokens, 1024);
  EXPECT_DOUBLE_EQ(r.workload.mean_output_tokens, 128);
  EXPECT_TRUE(HasNote(r, "mean input and output tokens stand in"));
}

TEST(RunReaders, VllmDetailedKeepsSuccessfulRequestLengths) {
  auto runs = ReadRunFile(Data("vllm-bench-serve-detailed.json"), "vllm");
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  const ImportedRun& r = (*runs)[0];
  // The failed request (output length 0) is dropped from the lengths.
  EXPECT_EQ(r.workload.input_lens, (std::vector<int64_t>{120, 342, 88, 201, 97, 192, 64}));
  EXPECT_EQ(r.workload.output_lens, (std::vector<int64_t>{128, 211, 64, 180, 96, 150, 76}));
  EXPECT_EQ(r.workload.request_rate, 4.0);
  EXPECT_EQ(r.workload.burstiness, 1.0);
  EXPECT_FALSE(r.workload.max_concurrency.has_value());
  const auto m = Metrics(r);
  EXPECT_DOUBLE_EQ(m.at("p90_e2el_ms"), 1201.4);
  EXPECT_DOUBLE_EQ(m.at("mean_e2el_ms"), 876.5);
  EXPECT_TRUE(HasNote(r, "1 request(s) failed"));
}

TEST(RunReaders, VllmAppendResultOneRunPerLine) {
  // --append-result: the second run's object after a newline; json.dump
  // writes an infinite --burstiness as the bare token Infinity.
  const std::string a = R"({"num_prompts": 4, "completed": 4, "total_input_tokens": 40,
      "total_output_tokens": 8, "request_throughput": 1, "output_throughput": 2,
      "total_token_throughput": 12, "request_rate": 2.0, "burstiness": 1.0})";
  std::string b = a;
  b.replace(b.find("1.0}"), 4, "Infinity}");
  auto one_line = [](std::string s) {
    for (char& ch : s) ch = ch == '\n' ? ' ' : ch;
    return s;
  };
  auto runs = ReadRunText(one_line(a) + "\n" + one_line(b), "append.json", "auto");
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].label, "run 1 vllm bench serve");
  EXPECT_EQ((*runs)[1].label, "run 2 vllm bench serve");
  EXPECT_TRUE(std::isinf(*(*runs)[1].workload.burstiness));
  auto bad = ReadRunText(one_line(a) + "\n{\"num_prompts\": 1}", "append.json", "vllm");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("append.json:2: /completed: required field is missing"),
            std::string::npos)
      << bad.status().message();
}

TEST(RunReaders, SglangBenchServingLinesWithInfinity) {
  auto runs = ReadRunFile(Data("sglang-bench-serving.jsonl"), "auto");
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->size(), 2u);
  const ImportedRun& a = (*runs)[0];
  const ImportedRun& b = (*runs)[1];
  EXPECT_EQ(a.format, "sglang");
  EXPECT_EQ(a.label, "run 1 c=8");
  EXPECT_EQ(b.label, "run 2 c=32");
  EXPECT_FALSE(a.workload.request_rate.has_value());  // the bare token Infinity
  EXPECT_EQ(b.workload.max_concurrency, 32);
  EXPECT_EQ(b.workload.num_requests, 320);  // completed: the line has no num_prompts
  EXPECT_TRUE(HasNote(b, "does not record --num-prompts"));
  EXPECT_EQ(a.workload.random_input_len, 1024);
  EXPECT_EQ(a.workload.random_output_len, 128);
  EXPECT_EQ(a.workload.random_range_ratio, 1.0);
  const auto m = Metrics(b);
  EXPECT_DOUBLE_EQ(m.at("mean_e2el_ms"), 1455.9);  // from mean_e2e_latency_ms
  EXPECT_DOUBLE_EQ(m.at("p99_e2el_ms"), 1602.5);
  EXPECT_DOUBLE_EQ(m.at("input_throughput"), 22352.0);
  EXPECT_EQ(m.count("total_token_throughput"), 0u);  // no total_throughput at that version
}

TEST(RunReaders, GuidellmReportOneRunPerBenchmark) {
  auto runs = ReadRunFile(Data("guidellm-benchmarks.json"), "auto");
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->size(), 2u);
  const ImportedRun& c = (*runs)[0];
  const ImportedRun& k = (*runs)[1];
  EXPECT_EQ(c.label, "concurrent@16");
  EXPECT_EQ(c.workload.max_concurrency, 16);
  EXPECT_EQ(c.workload.num_requests, 320);
  EXPECT_DOUBLE_EQ(c.workload.mean_input_tokens, 512);
  EXPECT_EQ(k.label, "constant@4");
  EXPECT_EQ(k.workload.request_rate, 4.0);
  EXPECT_TRUE(std::isinf(*k.workload.burstiness));  // evenly spaced
  const auto m = Metrics(c);
  EXPECT_DOUBLE_EQ(m.at("request_throughput"), 14.1);
  EXPECT_DOUBLE_EQ(m.at("output_throughput"), 1805.0);
  EXPECT_DOUBLE_EQ(m.at("mean_ttft_ms"), 48.0);
  EXPECT_DOUBLE_EQ(m.at("mean_e2el_ms"), 1130.0);  // request_latency is in seconds
  EXPECT_DOUBLE_EQ(m.at("p90_ttft_ms"), 62.4);
  EXPECT_EQ(c.model_id, "meta-llama/Llama-3.1-8B-Instruct");
}

TEST(RunReaders, InferencexAggregatedResult) {
  auto runs = ReadRunFile(Data("inferencex-agg.json"), "auto");
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  const ImportedRun& r = (*runs)[0];
  EXPECT_EQ(r.format, "inferencex");
  EXPECT_EQ(r.tool_version, "vllm/vllm-openai:v0.11.0");
  EXPECT_EQ(r.workload.max_concurrency, 16);
  EXPECT_EQ(r.workload.num_requests, 160);  // the recipes: CONC * 10
  EXPECT_EQ(r.workload.client, "inferencex");
  EXPECT_EQ(r.workload.random_input_len, 1024);
  EXPECT_EQ(r.deployment.at("tp"), 1);
  EXPECT_EQ(r.deployment.at("dp_attention"), false);
  EXPECT_EQ(r.deployment.at("engine"), "vllm");
  const auto m = Metrics(r);
  EXPECT_DOUBLE_EQ(m.at("total_token_throughput_per_gpu"), 3204.8);
  EXPECT_NEAR(m.at("mean_ttft_ms"), 71.2, 1e-9);  // seconds in the file
  EXPECT_NEAR(m.at("p99_e2el_ms"), 10400, 1e-6);
  EXPECT_EQ(m.count("mean_intvty_ms"), 0u);
}

}  // namespace
}  // namespace capplan::calibrate::runs
