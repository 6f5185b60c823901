// `capplan validate`: replays the exact batches an engine serve-bench run
// recorded (calibrate/ENGINE_RUN.md, engine/serve_bench.cc) through the
// simulator's step cost model and compares with the measured iteration times.
#ifndef CAPPLAN_CALIBRATE_VALIDATE_H_
#define CAPPLAN_CALIBRATE_VALIDATE_H_

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "calibrate/validate_op_ids.h"
#include "hw/profile.h"
#include "common/status.h"

namespace capplan::calibrate {

struct ReplayResult {
  std::string backend, model, dims;
  int layers = 0;
  int tp = 1;
  std::vector<double> measured_s, predicted_s;
  // Per iteration: predicted / measured - 1 (signed).
  std::vector<double> rel_err;
  // Of |rel_err|.
  double median_abs_err = 0, p90_abs_err = 0, worst_abs_err = 0;
  double median_signed_err = 0;  // bias: > 0 means the model is slow
  int worst_iteration = -1;
  int64_t tokens = 0;  // prefill + decode tokens over all iterations
  double measured_tokens_per_s = 0, predicted_tokens_per_s = 0;
  double tokens_per_s_rel_err = 0;  // predicted / measured - 1
  std::set<std::string> warnings;   // shapes outside the profile's fitted ranges
  // Per op class over the run, when every iteration carries "op_us" (the
  // forward split by op class, ENGINE_RUN.md): the forward's measured time
  // against the simulator's price of the same ops (verification excluded:
  // it is verify_us, outside op_us). Empty otherwise.
  struct ClassSplit {
    std::string op_class;
    double measured_s = 0, predicted_s = 0;
  };
  std::vector<ClassSplit> class_split;
  double host_s = 0;  // host work inside the forwards (its own figure, not a class)
  // Per layer-program op id over the run, when every iteration carries
  // "op_id_us": the engine's time of each op id against the simulator's
  // price of the ops of that id in the same batches (sim::CostModel::
  // ExplainOps: launch and host costs are the step's, in no op). Empty
  // otherwise.
  std::vector<OpIdSplit> op_id_split;
};

// `run` is an ENGINE_RUN document read from `origin` (errors name it and the
// JSON path). The model is the run's card with the slice's layer count and,
// for "small" dims, the slice's widths; iterations are priced eagerly (no
// CUDA graph), without CPU scheduling and without collectives, because the
// engine's measured_us covers one rank's verify + forward only
// (calibrate/ENGINE_RUN.md).
Result<ReplayResult> ReplayEngineRun(const nlohmann::json& run, const std::string& origin,
                                     const hw::HardwareProfile& profile);

// The one-screen text `capplan validate` prints.
std::string FormatReplay(const ReplayResult& r, const std::string& run_path,
                         const hw::HardwareProfile& profile);
nlohmann::json ReplayToJson(const ReplayResult& r, const std::string& run_path,
                            const hw::HardwareProfile& profile);

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_VALIDATE_H_
