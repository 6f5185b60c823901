// An engine's server log of the benchmarked run: its start-up KV pool line
// (a capacity check) and its periodic step lines (what the engine ran, for
// calibration).
//
// Lines read, by engine:
// - vLLM start-up: "GPU KV cache size: 1,234,567 tokens" (vllm/v1/core/
//   kv_cache_utils.py, V1 engine), "Available KV cache memory: 12.34 GiB"
//   (vllm/v1/worker/gpu_worker.py), "# GPU blocks: N" or "# cuda blocks: N"
//   (V0 engine: vllm/engine/llm_engine.py, vllm/executor/executor_base.py;
//   blocks of the deployment's page size). vLLM periodic stats
//   (LoggingStatLogger.log in vllm/v1/metrics/loggers.py): "Avg prompt
//   throughput: X tokens/s, Avg generation throughput: X tokens/s, Running:
//   N reqs, Waiting: N reqs, GPU KV cache usage: X%" (the usage may be
//   "n/a"; other fields between them are skipped).
// - SGLang start-up: "mem_fraction_static=X" in its server_args line
//   (python/sglang/srt/server_args.py), "max_total_num_tokens=N"
//   (python/sglang/srt/managers/scheduler.py) or "KV Cache is allocated. #tokens: N"
//   (python/sglang/srt/ mem_cache/memory_pool.py). SGLang steps (log_prefill_stats /
//   log_decode_stats, python/sglang/srt/managers/scheduler_metrics_mixin.py):
//   "Prefill batch. #new-seq: N, #new-token: N, #cached-token: N, token
//   usage: X, #running-req: N, #queue-req: N" and "Decode batch.
//   #running-req: N, #token: N, token usage: X, ..., gen throughput
//   (token/s): X, #queue-req: N" ("#full token:" with sliding-window pools).
// Text around them (timestamps, "[TP0]" prefixes, other lines) is skipped.
#ifndef CAPPLAN_CALIBRATE_RUNS_SERVER_LOG_H_
#define CAPPLAN_CALIBRATE_RUNS_SERVER_LOG_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace capplan::calibrate::runs {

// Running statistics of one kind of step line.
struct StepLineStats {
  int64_t lines = 0;
  double running_sum = 0, waiting_sum = 0, tokens_sum = 0, throughput_sum = 0;
  int64_t running_max = 0, waiting_max = 0, tokens_max = 0;
  double kv_usage_max = 0;  // fraction of the pool
  int64_t tokens_lines = 0, throughput_lines = 0;
};

// Decode lines grouped by their batch size: what a step-cost fit reads
// (SGLang's decode throughput at N running requests and T tokens in use).
struct DecodeGroup {
  int64_t lines = 0;
  double tokens_sum = 0, throughput_sum = 0;
  int64_t throughput_lines = 0;
};

struct ServerLog {
  std::string engine;  // "vllm" or "sglang"
  // The version the server states at start-up ("vLLM API server version
  // 0.10.1", vllm/entrypoints/openai/api_server.py); "" when absent.
  std::string engine_version;
  // The engine's KV pool in tokens (one instance), the line it came from.
  std::optional<int64_t> kv_tokens;
  std::optional<int64_t> gpu_blocks;       // vLLM V0: in pages
  std::optional<double> available_kv_gib;  // vLLM: per GPU
  // SGLang's server_args echo at start-up (mem_fraction_static, e.g. 0.88): the
  // fraction the run used, which the scenario needs to size the same pool.
  std::optional<double> mem_fraction_static;
  std::string kv_line;
  StepLineStats periodic;         // vLLM stats lines (throughputs: prompt + generation)
  StepLineStats prefill, decode;  // SGLang
  std::map<int64_t, DecodeGroup> decode_by_running;  // SGLang, by #running-req
  int64_t lines_read = 0;
};

// Errors: a log with none of the lines above, or with both engines' lines,
// is a one-line error naming `origin` and the lines expected.
Result<ServerLog> ParseServerLog(std::string_view text, const std::string& origin);

// The summary kept in an imported case (case_builder.h) for calibration:
// means and maxima per kind of line, the decode groups by batch size.
nlohmann::json ServerLogToJson(const ServerLog& log);

}  // namespace capplan::calibrate::runs

#endif  // CAPPLAN_CALIBRATE_RUNS_SERVER_LOG_H_
