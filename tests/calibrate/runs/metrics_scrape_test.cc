// Prometheus /metrics scrapes of vLLM and SGLang (calibrate/runs/metrics_scrape.h).
#include "calibrate/runs/metrics_scrape.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

namespace capplan::calibrate::runs {
namespace {

std::string ReadData(const std::string& name) {
  std::ifstream in(std::string(RUNS_DATA) + "/" + name);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(MetricsScrape, VllmHistogramMeansAndCounters) {
  auto s = ParseMetricsScrape(ReadData("vllm-metrics.txt"), "vllm-metrics.txt");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->engine, "vllm");
  const nlohmann::json j = MetricsScrapeToJson(*s);
  EXPECT_NEAR(j["mean_ttft_ms"].get<double>(), 9.44 / 160 * 1000, 1e-9);
  EXPECT_NEAR(j["mean_itl_ms"].get<double>(), 181.2 / 20320 * 1000, 1e-9);
  EXPECT_NEAR(j["mean_iteration_tokens"].get<double>(), 184320.0 / 2410, 1e-9);
  EXPECT_EQ(j["prompt_tokens_total"], 163840.0);
  EXPECT_EQ(j["running_requests"], 0.0);
  EXPECT_EQ(j["kv_usage_fraction"], 0.0);
}

TEST(MetricsScrape, SeriesSummedUsageMaxedLabelsWithBraces) {
  const std::string text =
      "sglang:num_running_reqs{dp=\"0\",name=\"a}b \\\" c\"} 3\n"
      "sglang:num_running_reqs{dp=\"1\"} 5 1700000000000\n"
      "sglang:token_usage{dp=\"0\"} 0.25\n"
      "sglang:token_usage{dp=\"1\"} 0.5\n"
      "sglang:time_to_first_token_seconds_sum 2.0\n"
      "sglang:time_to_first_token_seconds_count 4\n"
      "sglang:time_to_first_token_seconds_bucket{le=\"+Inf\"} 4\n"
      "other_metric 7\n";
  auto s = ParseMetricsScrape(text, "s.txt");
  ASSERT_TRUE(s.ok()) << s.status().message();
  const nlohmann::json j = MetricsScrapeToJson(*s);
  EXPECT_EQ(j["engine"], "sglang");
  EXPECT_EQ(j["running_requests"], 8.0);
  EXPECT_EQ(j["kv_usage_fraction"], 0.5);
  EXPECT_EQ(j["mean_ttft_ms"], 500.0);
  EXPECT_FALSE(j.contains("waiting_requests"));
}

TEST(MetricsScrape, Errors) {
  auto bad = ParseMetricsScrape("vllm:num_requests_running{engine=\"0\" 1\n", "b.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "b.txt:1: labels not closed with '}'");
  auto value = ParseMetricsScrape("# HELP x\nvllm:num_requests_running one\n", "v.txt");
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().message(), "v.txt:2: 'one' is not a sample value");
  auto none = ParseMetricsScrape("process_cpu_seconds_total 3\n", "n.txt");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("n.txt: no vLLM or SGLang metric found"),
            std::string::npos);
  auto mixed = ParseMetricsScrape("vllm:num_requests_running 1\nsglang:num_queue_reqs 2\n", "m");
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().message(),
            "m:2: a sglang metric in a vllm scrape; give one engine's "
            "/metrics");
}

}  // namespace
}  // namespace capplan::calibrate::runs
