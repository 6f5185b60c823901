// Where shipped data (model cards, profiles, scenarios) lives at run time:
// $CAPPLAN_DATA_DIR when set, else the source tree the binary was built from.
#ifndef CAPPLAN_COMMON_DATA_PATH_H_
#define CAPPLAN_COMMON_DATA_PATH_H_

#include <string>
#include <string_view>

namespace capplan {

// DataRoot() + "/" + relative, e.g. DataPath("models/cards").
std::string DataPath(std::string_view relative);
std::string DataRoot();

}  // namespace capplan

#endif  // CAPPLAN_COMMON_DATA_PATH_H_
