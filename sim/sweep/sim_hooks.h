// The real simulator behind the sweep/search hooks: ParseScenario as the
// validator, RunScenario as the runner, and the models/ memory plan as the
// cheap pruning check.
#ifndef CAPPLAN_SIM_SWEEP_SIM_HOOKS_H_
#define CAPPLAN_SIM_SWEEP_SIM_HOOKS_H_

#include <string>

#include "sim/sweep/hooks.h"

namespace capplan {

// `origin` is the scenario file: errors name it, and relative trace paths
// resolve against its directory.
SimHooks RealSimHooks(const std::string& origin);

}  // namespace capplan

#endif  // CAPPLAN_SIM_SWEEP_SIM_HOOKS_H_
