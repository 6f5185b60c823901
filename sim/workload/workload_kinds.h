// The built-in workload kinds (registered in workload.cc). Internal to
// sim/workload; the simulator uses LoadWorkload.
#ifndef CAPPLAN_SIM_WORKLOAD_WORKLOAD_KINDS_H_
#define CAPPLAN_SIM_WORKLOAD_WORKLOAD_KINDS_H_

#include <string>

#include "common/json_util.h"
#include "common/status.h"
#include "sim/workload/workload.h"

namespace capplan::sim {

Status LoadClosedLoop(JsonObject& w, const std::string& scenario_dir, Workload* out);
Status LoadOpenLoop(JsonObject& w, const std::string& scenario_dir, Workload* out);
Status LoadTrace(JsonObject& w, const std::string& scenario_dir, Workload* out);
Status LoadSessions(JsonObject& w, const std::string& scenario_dir, Workload* out);

// The most requests one workload generates: 100M RequestSpecs are 3.2 GB,
// past which a typo (an extra zero) is likelier than intent.
inline constexpr int64_t kMaxRequests = 100'000'000;

// Random streams drawn from one seed (see WorkloadRng): fixed forever, since
// changing them changes every generated workload.
inline constexpr uint64_t kInputLengthStream = 1;
inline constexpr uint64_t kOutputLengthStream = 2;
inline constexpr uint64_t kArrivalStream = 3;
inline constexpr uint64_t kSessionTurnsStream = 4;
inline constexpr uint64_t kSessionThinkStream = 5;

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_WORKLOAD_WORKLOAD_KINDS_H_
