// Outputs are written atomically: a temporary file in the same directory is
// written, flushed and renamed over the target, so a failure or a crash never
// leaves a half-written result.
#ifndef CAPPLAN_COMMON_ATOMIC_FILE_H_
#define CAPPLAN_COMMON_ATOMIC_FILE_H_

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace capplan {

// Creates parent directories as needed. Io error naming the path on failure.
// A symbolic link is followed (its target is replaced, the link stays); an
// existing device, FIFO, socket or directory is refused, since renaming over
// it would replace it with a regular file.
Status WriteFileAtomic(const std::string& path, std::string_view content);

// Writes files (name -> content) into the folder `dir` as one result: each
// is written in full to a hidden temporary first, and only when all are
// written are they renamed into place, so a failure (a full disk, a folder
// that cannot be written) leaves the earlier files as they were and a folder
// this call created absent. Other files in `dir` are left alone. Io error
// naming `dir`; `dir` being a file is one.
Status WriteDirAtomic(const std::string& dir,
                      const std::vector<std::pair<std::string, std::string>>& files);

// One file of a folder result, written into a stream by a function: a file
// too large to build in memory (a day-long trace's requests.csv) streams
// straight into its temporary. An error it returns is returned as is.
using StreamWriter = std::function<Status(std::ostream&)>;
// WriteDirAtomic with each file's content written by its function, in
// order, into its temporary. A folder this call creates exists only while
// the writers run and is removed by an interrupt, so Ctrl-C during a long
// writer leaves no folder behind.
Status WriteDirAtomicStreamed(const std::string& dir,
                              const std::vector<std::pair<std::string, StreamWriter>>& files);

// Inputs larger than this are refused rather than read into memory.
inline constexpr int64_t kMaxInputFileBytes = int64_t{256} << 20;
// Reads a whole regular file of at most `max_bytes`. NotFound when it does
// not exist or cannot be opened, Usage when it is not a regular file (a FIFO
// would block, a device like /dev/zero never ends) or is too large.
Result<std::string> ReadFile(const std::string& path, int64_t max_bytes = kMaxInputFileBytes);
// mkdir -p. Io error naming the path on failure.
Status MakeDirs(const std::string& path);

}  // namespace capplan

#endif  // CAPPLAN_COMMON_ATOMIC_FILE_H_
