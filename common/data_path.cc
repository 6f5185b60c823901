#include "common/data_path.h"

#include <cstdlib>

namespace capplan {

std::string DataRoot() {
  if (const char* env = std::getenv("CAPPLAN_DATA_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
#ifdef CAPPLAN_SOURCE_DIR
  return CAPPLAN_SOURCE_DIR;
#else
  return ".";
#endif
}

std::string DataPath(std::string_view relative) {
  return DataRoot() + "/" + std::string(relative);
}

}  // namespace capplan
