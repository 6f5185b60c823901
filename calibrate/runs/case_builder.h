// Imported runs -> one validation case (capplan.validation_case.v1,
// validation/README.md) that `capplan validate CASE` runs: the scenario
// (the user's, or one made from deployment flags) with each run's workload,
// one row per run with the benchmark's measured metrics, a capacity row
// when the server log gives the engine's KV pool, and under `import` where
// it all came from plus the server log's and /metrics scrape's summaries,
// kept for a later calibration fit.
#ifndef CAPPLAN_CALIBRATE_RUNS_CASE_BUILDER_H_
#define CAPPLAN_CALIBRATE_RUNS_CASE_BUILDER_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/runs/imported_run.h"
#include "calibrate/runs/metrics_scrape.h"
#include "calibrate/runs/server_log.h"
#include "common/status.h"

namespace capplan::calibrate::runs {

// The deployment given on the command line instead of a scenario file.
struct DeploymentFlags {
  std::string model, hardware, engine, engine_version, kv_cache, weights;
  std::optional<int64_t> tp, ep, gpus;
  std::optional<bool> dp_attention;
  std::optional<double> mem_fraction_static;
};

// A scenario (sim/scenario.h's JSON) for the runs: model, hardware and
// deployment from `flags`, the first run's recorded deployment (InferenceX:
// tp, ep, dp_attention, engine) filling what the flags leave out. A
// missing model, hardware, engine or tp is a Usage error naming the flag.
Result<nlohmann::json> ScenarioFromFlags(const DeploymentFlags& flags, const ImportedRun& first);

// The scenario `workload` a run's client sent (sim/workload/README.md):
// closed_loop at --max-concurrency with --request-rate inf, else
// open_loop; per-request lengths as empirical values, a random dataset as
// its client draws it, else the run's means as fixed lengths.
nlohmann::json WorkloadJson(const RunWorkload& w);

struct CaseInputs {
  std::string name;         // the case's and its scenario's name
  std::string run_file;     // as given on the command line
  nlohmann::json scenario;  // model, hardware, deployment; its workload is replaced
  std::vector<ImportedRun> runs;
  std::optional<ServerLog> log;
  std::string log_file;
  std::optional<MetricsScrape> scrape;
  std::string scrape_file;
};

// The case as JSON. Internal error if a run carries a metric the case format
// does not compare (a reader's bug).
Result<nlohmann::json> BuildCase(const CaseInputs& in);

}  // namespace capplan::calibrate::runs

#endif  // CAPPLAN_CALIBRATE_RUNS_CASE_BUILDER_H_
