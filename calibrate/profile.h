// A hardware profile: datasheet peaks, measured ceilings, fitted efficiency
// curves per op class, the collective and overhead models; every parameter
// carries its provenance. Files live in calibrate/profiles/<name>.json.
//
// OWNERSHIP NOTE (bootstrap): this is the minimal surface models/ needs. The
// simulator issue extends the struct and the loader with the cost-model
// parameters; keep LoadHardwareProfile and gpu_memory_bytes stable.
#ifndef CAPPLAN_CALIBRATE_PROFILE_H_
#define CAPPLAN_CALIBRATE_PROFILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace capplan {

struct HardwareProfile {
  std::string name;        // "h200-sxm"
  std::string gpu;         // "NVIDIA H200 SXM"
  std::string path;        // file it was loaded from
  int64_t gpu_memory_bytes = 0;  // what the driver reports as total
};

// `name_or_path`: a .json path or a name under DataPath("calibrate/profiles").
Result<HardwareProfile> LoadHardwareProfile(const std::string& name_or_path);
std::vector<std::string> ShippedProfileNames();

}  // namespace capplan

#endif  // CAPPLAN_CALIBRATE_PROFILE_H_
