#include "calibrate/profile.h"

#include <algorithm>
#include <filesystem>

#include "common/data_path.h"
#include "common/did_you_mean.h"
#include "common/json_util.h"

namespace capplan {

std::vector<std::string> ShippedProfileNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(DataPath("calibrate/profiles"), ec)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<HardwareProfile> LoadHardwareProfile(const std::string& name_or_path) {
  std::string path = name_or_path;
  if (name_or_path.find('/') == std::string::npos &&
      name_or_path.find(".json") == std::string::npos) {
    path = DataPath("calibrate/profiles/" + name_or_path + ".json");
    if (!std::filesystem::exists(path)) {
      return Status::NotFound("unknown hardware profile '" + name_or_path + "'" +
                              DidYouMean(name_or_path, ShippedProfileNames()));
    }
  }
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  JsonObject root(doc, path, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  HardwareProfile p;
  p.path = path;
  CAPPLAN_RETURN_IF_ERROR(root.Get("name", &p.name, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("gpu", &p.gpu, true));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject mem, root.Child("memory", true));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject cap, mem.Child("gpu_memory_bytes", true));
  CAPPLAN_RETURN_IF_ERROR(cap.Get("value", &p.gpu_memory_bytes, true));
  return p;
}

}  // namespace capplan
