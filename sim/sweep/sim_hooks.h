// The real simulator behind the sweep/search hooks: ParseScenario as the
// validator, RunScenario as the runner, and the models/ memory plan of every
// pool as the cheap pruning check.
#ifndef CAPPLAN_SIM_SWEEP_SIM_HOOKS_H_
#define CAPPLAN_SIM_SWEEP_SIM_HOOKS_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "sim/sweep/hooks.h"

namespace capplan::sim::sweep {

// `origin` is the scenario file: errors name it, and relative trace paths
// resolve against its directory. `fast_forward`: RunOptions::fast_forward
// for every simulation.
SimHooks RealSimHooks(const std::string& origin, bool fast_forward = true);

// The scenario document at `path` with "dotted.path=value" overrides applied,
// loaded and checked by the simulator's own loader (LoadScenarioFile, or
// LoadPdScenarioFile for a PD scenario).
Result<nlohmann::json> LoadBaseScenario(const std::string& path,
                                        const std::vector<std::string>& sets);

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_SIM_HOOKS_H_
