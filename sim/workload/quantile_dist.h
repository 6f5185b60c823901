// The "quantiles" length distribution: a length's quantile function given at
// equally spaced probabilities 0, 1/(n-1), ..., 1, drawn by inverse transform
// with linear interpolation between the points and, when the spec gives a
// `mean`, rescaled so that the distribution's mean is that mean. It carries a
// dataset's shape (ShareGPT's heavy-tailed prompts, say) to a run whose
// tokenizer gives other lengths. The points come from `values`, a lengths
// file (`path`, one length per line in percentile order), or a shipped
// preset (`preset`: sim/workload/presets/<name>.txt under the data root).
#ifndef CAPPLAN_SIM_WORKLOAD_QUANTILE_DIST_H_
#define CAPPLAN_SIM_WORKLOAD_QUANTILE_DIST_H_

#include <memory>
#include <string>

#include "common/json_util.h"
#include "common/status.h"
#include "sim/workload/length_dist.h"

namespace capplan::sim {

Result<std::unique_ptr<LengthDist>> MakeQuantiles(JsonObject& spec, const std::string& dir);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_WORKLOAD_QUANTILE_DIST_H_
