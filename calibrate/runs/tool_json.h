// What the result readers share: JSON as the Python benchmark tools write
// it, and errors that say which tool's file was expected.
#ifndef CAPPLAN_CALIBRATE_RUNS_TOOL_JSON_H_
#define CAPPLAN_CALIBRATE_RUNS_TOOL_JSON_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "calibrate/runs/imported_run.h"
#include "common/json_util.h"
#include "common/status.h"

namespace capplan::calibrate::runs {

// Python's json.dumps writes float('inf') and float('nan') as the bare
// tokens Infinity, -Infinity and NaN, which JSON does not have (SGLang's
// bench_serving writes `"request_rate": Infinity` at its default rate).
// Outside strings they are read as the strings "inf" and "-inf", and NaN as
// null; everything else goes through ParseJson (common/json_util.h).
Result<nlohmann::json> ParseToolJson(std::string_view text, const std::string& origin);

// `st` with " (HINT)" appended to its message; Ok stays Ok.
Status WithHint(const Status& st, const std::string& hint);

// A rate as the tools write it: a number > 0, or "inf"/Infinity/null for
// "all at once" (returned as nullopt).
Status GetRate(JsonObject& o, std::string_view key, std::optional<double>* out);

// A number that may be absent or null; a present value must be a number.
Status GetOptional(JsonObject& o, std::string_view key, std::optional<double>* out);

// Adds `key` = value to run->measured when it is finite and > 0; otherwise
// notes that `from` (the file's key) was absent or not > 0 and is not compared.
void AddMetric(ImportedRun* run, const std::string& key, const std::optional<double>& value,
               const std::string& from);

// The latency statistics a serving benchmark writes as
// {mean,median,p90,p99}_<file_name>_ms (vLLM: ttft, tpot, itl, e2el; SGLang:
// e2e_latency for e2el), added as {stat}_<capplan_name>_ms. Only an absent
// or zero mean is noted: the percentiles a run writes are its own choice
// (vLLM's --metric-percentiles).
Status AddLatencyMetrics(JsonObject& o, const std::string& file_name,
                         const std::string& capplan_name, ImportedRun* run);

// The per-request `input_lens` and `output_lens` (vllm bench serve
// --save-detailed, sglang bench_serving): both or neither, one token count
// per request; requests with an empty prompt or answer are left out.
Status ReadRequestLengths(JsonObject& o, ImportedRun* run);

// Calls fn(line, line_no) for each '\n'-separated line of `text` (numbered
// from 1; the last line may lack its newline), up to the first error fn
// returns: the line reader of every text format import-run reads.
Status ForEachLine(std::string_view text,
                   const std::function<Status(std::string_view, int64_t)>& fn);

// "20250131-235959" (vLLM's date) or "2025-01-31..." -> "2025-01-31"; "" otherwise.
std::string IsoDate(std::string_view text);

}  // namespace capplan::calibrate::runs

#endif  // CAPPLAN_CALIBRATE_RUNS_TOOL_JSON_H_
