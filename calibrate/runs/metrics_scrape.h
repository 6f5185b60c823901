// A Prometheus `/metrics` scrape of the engine (text exposition format,
// https://prometheus.io/docs/instrumenting/exposition_formats/), taken after
// the benchmarked run: requests running and waiting, KV usage, and the
// means of the latency and iteration-size histograms.
//
// Metric names: vLLM (vllm/v1/metrics/loggers.py, PrometheusStatLogger)
// vllm:num_requests_running, vllm:num_requests_waiting,
// vllm:kv_cache_usage_perc (vllm:gpu_cache_usage_perc before it; a
// fraction despite the name), vllm:time_to_first_token_seconds,
// vllm:inter_token_latency_seconds (vllm:time_per_output_token_seconds
// before it), vllm:e2e_request_latency_seconds, vllm:iteration_tokens_total
// (histograms), vllm:prompt_tokens_total, vllm:generation_tokens_total,
// vllm:num_preemptions_total; SGLang (python/sglang/srt/metrics/collector.py)
// sglang:num_running_reqs, sglang:num_queue_reqs, sglang:token_usage,
// sglang:gen_throughput, sglang:time_to_first_token_seconds,
// sglang:inter_token_latency_seconds, sglang:e2e_request_latency_seconds,
// sglang:prompt_tokens_total, sglang:generation_tokens_total. Series of one
// name (engines, DP ranks) are summed; usage takes their maximum.
// Histograms and counters run from the server's start, so their means
// include whatever it served before the benchmark.
#ifndef CAPPLAN_CALIBRATE_RUNS_METRICS_SCRAPE_H_
#define CAPPLAN_CALIBRATE_RUNS_METRICS_SCRAPE_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace capplan::calibrate::runs {

struct MetricsScrape {
  std::string engine;                    // "vllm" or "sglang"
  std::map<std::string, double> values;  // known metric (or NAME_sum / NAME_count) -> total
  std::map<std::string, double> maxima;  // usage gauges: the largest series
  int64_t series_read = 0;
};

// Errors: a line that is not `name[{labels}] value [timestamp]`
// ("FILE:LINE: ..."), or no known metric at all.
Result<MetricsScrape> ParseMetricsScrape(std::string_view text, const std::string& origin);

// What the case keeps: running_requests, waiting_requests,
// kv_usage_fraction, mean_{ttft,itl,e2el}_ms, mean_iteration_tokens,
// prompt_tokens_total, generation_tokens_total, preemptions_total,
// gen_throughput (each when scraped).
nlohmann::json MetricsScrapeToJson(const MetricsScrape& s);

}  // namespace capplan::calibrate::runs

#endif  // CAPPLAN_CALIBRATE_RUNS_METRICS_SCRAPE_H_
