// Outputs are written atomically: a temporary file in the same directory is
// written, flushed and renamed over the target, so a failure or a crash never
// leaves a half-written result.
#ifndef CAPPLAN_COMMON_ATOMIC_FILE_H_
#define CAPPLAN_COMMON_ATOMIC_FILE_H_

#include <string>
#include <string_view>

#include "common/status.h"

namespace capplan {

// Creates parent directories as needed. Io error naming the path on failure.
Status WriteFileAtomic(const std::string& path, std::string_view content);
// Reads a whole file. NotFound naming the path on failure.
Result<std::string> ReadFile(const std::string& path);
// mkdir -p. Io error naming the path on failure.
Status MakeDirs(const std::string& path);

}  // namespace capplan

#endif  // CAPPLAN_COMMON_ATOMIC_FILE_H_
