// Readers for public LLM-serving request traces, registered by format name:
//   azure_2023  Azure LLM inference 2023 CSV (TIMESTAMP,ContextTokens,
//               GeneratedTokens; naive times with 7 fractional digits)
//   azure_2024  Azure LLM inference 2024 CSV (same columns; UTC offsets and
//               mixed fractional precision)
//   mooncake    Mooncake JSONL (timestamp ms, input_length, output_length,
//               hash_ids of 512-token prefix blocks)
//   burstgpt    BurstGPT CSV (Timestamp s, Model, Request tokens, Response
//               tokens, Total tokens, Log Type)
// Formats as published: Azure/AzurePublicDataset (AzureLLMInferenceTrace_*.csv,
// AzureLLMInferenceDataset2024Links.txt), kvcache-ai/Mooncake
// (FAST25-release/traces/*.jsonl), HPMLL/BurstGPT (data/BurstGPT_*.csv).
// Errors name FILE:LINE and say what was expected.
#ifndef CAPPLAN_SIM_WORKLOAD_TRACE_READER_H_
#define CAPPLAN_SIM_WORKLOAD_TRACE_READER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/registry.h"
#include "common/status.h"

namespace capplan::sim {

struct TraceRow {
  int64_t timestamp_ns = 0;  // absolute as written (format's epoch), exact
  int64_t input_tokens = 0;  // >= 1 (0 in the file is raised to 1, counted)
  int64_t output_tokens = 0;
  int64_t line = 0;  // 1-based line in the file, for messages
};

// Mooncake's hash_ids cover 512-token prefix blocks (count =
// ceil(input_length / 512) in the rows of kvcache-ai/Mooncake
// FAST25-release/traces checked); a row never has more.
inline constexpr int64_t kMooncakeBlockTokens = 512;

struct TraceData {
  std::vector<TraceRow> rows;  // in file order
  // Mooncake only: per row, the prefix-block hash ids; empty otherwise.
  std::vector<std::vector<int64_t>> hash_ids;
  int64_t rows_dropped = 0;    // filtered out (BurstGPT model/failure filter)
  int64_t lengths_raised = 0;  // rows whose 0-token count was raised to 1
};

struct TraceReadOptions {
  // BurstGPT: keep only rows whose Model equals this ("" keeps all).
  std::string model_filter;
  // BurstGPT: drop failed requests (Response tokens == 0), as vLLM's
  // BurstGPT loader does.
  bool drop_failed = true;
};

using TraceParser = std::function<Status(std::string_view text, const std::string& origin,
                                         const TraceReadOptions& options, TraceData* out)>;

const Registry<TraceParser>& TraceFormatRegistry();

// Parses text already in memory; `origin` (a file name) prefixes errors.
Result<TraceData> ParseTraceText(const std::string& format, std::string_view text,
                                 const std::string& origin, const TraceReadOptions& options);
// Reads and parses a file. A missing file is NotFound naming the path.
Result<TraceData> ReadTraceFile(const std::string& format, const std::string& path,
                                const TraceReadOptions& options);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_WORKLOAD_TRACE_READER_H_
