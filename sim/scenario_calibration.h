// A scenario's `calibration` key: the overlay (sim/calibration_overlay.h)
// read from its file or inline, and its terms applied to the deployments of
// the pools that run its engine. Part of the scenario parser
// (sim/scenario.cc), kept apart from the overlay's own format so the overlay
// knows nothing of scenarios.
#ifndef CAPPLAN_SIM_SCENARIO_CALIBRATION_H_
#define CAPPLAN_SIM_SCENARIO_CALIBRATION_H_

#include "common/json_util.h"
#include "common/status.h"

namespace capplan::sim {

struct Scenario;  // sim/scenario.h

// Reads the scenario's `calibration` key (a path relative to the scenario's
// folder, or an overlay object) and applies the overlay to its pools.
// Absent: nothing. An overlay whose engine no pool runs is an error.
Status ParseScenarioCalibration(JsonObject& root, Scenario* sc);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_SCENARIO_CALIBRATION_H_
