// `capplan engine serve-bench`: the scenario's workload through the
// continuous-batching loop on a model slice, recording every iteration's
// batch and measured time (format: calibrate/ENGINE_RUN.md).
//
// The engine must not depend on sim/, so the scenario is read here with the
// few fields a run needs; everything else in the file is left to the
// simulator's parser (unknown keys are not errors here for that reason).
#ifndef CAPPLAN_ENGINE_SERVE_BENCH_H_
#define CAPPLAN_ENGINE_SERVE_BENCH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "engine/batch_loop.h"
#include "engine/slice_config.h"
#include "models/types.h"

namespace capplan::engine {

// A token-length distribution the engine can draw: fixed or uniform [min, max].
struct EngineLengthDist {
  std::string dist = "fixed";
  int64_t min = 1, max = 1;
  nlohmann::json ToJson() const;
};

struct EngineScenario {
  std::string path, name, model;
  int tp = 1;
  models::PrecisionChoice choice;
  std::string weights = "default";
  // Absent from the scenario: the defaults of its engine's profile.
  int32_t page_size = 0;
  int64_t chunked_prefill_tokens = 0;
  std::string kv_integrity = "none";
  int concurrency = 1;
  int num_requests = 1;
  uint64_t seed = 1;
  EngineLengthDist input, output;
};

// Reads the fields above from a scenario file (sim's format,
// scenarios/README.md). Errors name the file and JSON path.
Result<EngineScenario> ReadEngineScenario(const std::string& path);

struct ServeBenchOptions {
  int layers = 2;
  std::string dims = "small";
  std::string backend = "cpu";
  std::optional<int> num_requests, concurrency;
  std::optional<int64_t> input_len, output_len;
  std::optional<std::string> kv_integrity;
  std::optional<std::string> weights;  // default | bf16 | fp8 | int4
  std::optional<models::Dtype> kv_cache;
  int64_t kv_pages = 0;  // 0: enough for `concurrency` full-length requests
};

struct ServeBenchRun {
  nlohmann::json doc;  // the ENGINE_RUN file
  double output_tokens_per_s = 0;
  double total_tokens_per_s = 0;
  int completed = 0, failed = 0;
};

Result<ServeBenchRun> RunServeBench(const EngineScenario& scenario, const ServeBenchOptions& o);

// JSON of the loop's iterations, 1:1 with models/ops.h BatchShape.
nlohmann::json IterationsToJson(const std::vector<IterationRecord>& its);
nlohmann::json SliceToJson(const SliceConfig& s);
// Commit of the source tree the binary was built from ("unknown" if none).
std::string SourceCommit();

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_SERVE_BENCH_H_
