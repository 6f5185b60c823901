// A calibration overlay: deployment terms fitted on a user's own benchmark
// runs (`capplan calibrate --runs`, calibrate/run_fit.h), kept in a file of
// its own beside the shipped profiles, which it never rewrites. A scenario
// uses one with `"calibration": "overlay.json"` (a path relative to the
// scenario's folder, or the overlay object itself), or `--calibration`.
//
// Each term names what it sets, as a typed field of the deployment priced by
// the same code as without an overlay:
//   an engine step cost (models/engine_step_costs.h key: host_s,
//     cpu_schedule_per_request_s, ...)  -> DeploymentSpec::step_costs,
//     priced by PriceHost; a deployment's own `step_costs` still wins
//   kernel_scale.<implementation>        -> DeploymentSpec::kernel_scales,
//     multiplying the time the cost model prices for every op that runs
//     that implementation (only on the hardware profile the runs used)
//   kv_capacity_scale                    -> DeploymentSpec::kv_capacity_scale,
//     multiplying the memory plan's KV pool (the engine's start-up line
//     over capplan's plan of the same deployment)
// and the overlay applies to every pool whose engine is the runs' engine.
// A term the runs could not identify is listed with value == prior and
// `moved` false, so the file says what it did not learn.
#ifndef CAPPLAN_SIM_CALIBRATION_OVERLAY_H_
#define CAPPLAN_SIM_CALIBRATION_OVERLAY_H_

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/json_util.h"
#include "common/status.h"
#include "schema/run_summary.h"

namespace capplan::models {
struct MemoryPlan;
}

namespace capplan::sim {

inline constexpr const char* kCalibrationOverlayFormat = "capplan.calibration_overlay.v1";
inline constexpr const char* kKernelScalePrefix = "kernel_scale.";
inline constexpr const char* kKvCapacityScaleTerm = "kv_capacity_scale";

enum class OverlayTermKind { kStepCost, kKernelScale, kKvCapacityScale };

struct OverlayTerm {
  std::string name;  // "host_s", "kernel_scale.vllm_flash_attn", "kv_capacity_scale"
  OverlayTermKind kind = OverlayTermKind::kStepCost;
  size_t step_cost_index = 0;  // kStepCost: index in models::EngineStepCostKeys()
  std::string implementation;  // kKernelScale
  double prior = 0, value = 0;
  bool moved = false;
  std::string why;  // what identified it, or why it kept its prior
};

// One measured metric of one run, predicted with the priors and with the
// overlay (in-sample) and, when the fit held it out, from the other runs.
struct OverlayRunRow {
  std::string case_name, label, metric;
  double measured = 0, before = 0, after = 0;
  std::optional<double> held_out_after;
};

// The residual spread the fit leaves: per band group (sim/
// prediction_intervals.h kBandGroupNames: "throughput", "ttft", "tpot",
// "e2el") the p10 and p90 of measured / predicted over the runs' held-out
// predictions, never inside the in-sample spread. A run with the overlay
// takes these bands in place of the shipped model's for its groups
// (ApplyOverlayBands).
struct OverlayBand {
  double lo = 1, hi = 1;
  int rows = 0;
};

struct CalibrationOverlay {
  std::string engine, engine_version, hardware, model;
  std::string generated_by, created;  // the command; UTC date
  struct Run {
    std::string case_file, case_name, label, date, source;
  };
  std::vector<Run> runs;
  std::vector<OverlayTerm> terms;
  std::vector<OverlayRunRow> rows;
  std::string held_out_unit;  // "run" or "concurrency"
  double held_out_before_pct = 0, held_out_after_pct = 0;
  std::map<std::string, OverlayBand> bands;
};

// Strict: unknown keys, a term name that is neither a step cost key, a
// kernel scale nor kv_capacity_scale, values out of range (a step cost in
// [0, 1] s, a scale in [1/16, 16]) are one-line errors naming `origin` and
// the JSON path.
Result<CalibrationOverlay> ParseCalibrationOverlay(const nlohmann::json& doc,
                                                   const std::string& origin);
Result<CalibrationOverlay> ParseCalibrationOverlayText(std::string_view text,
                                                       const std::string& origin);
nlohmann::json CalibrationOverlayToJson(const CalibrationOverlay& o);

// What a scenario took from an overlay (the summary's warnings and the
// report say it).
struct AppliedCalibration {
  std::string origin;  // the file, or "<scenario>/calibration"
  std::shared_ptr<const CalibrationOverlay> overlay;
  std::vector<std::string> notes;  // terms not applied, and why
};

// Sets the band of every metric of a group the overlay has to the
// overlay's residual spread around the point (then widened for a short
// window, as the shipped bands are): the deployment's own runs measured
// that spread, where the shipped model's comes from other deployments.
void ApplyOverlayBands(const CalibrationOverlay& o, schema::RunSummary* summary);

// A kv_capacity_scale on a memory plan: each attention rank's pool (whole
// pages) and what follows from it.
void ScaleKvPool(double scale, models::MemoryPlan* plan);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_CALIBRATION_OVERLAY_H_
