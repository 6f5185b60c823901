// Temporary files and folders that an interrupted run must not leave behind.
// WriteFileAtomic and WriteDirAtomic register what they create here; after
// InstallInterruptCleanup, SIGINT and SIGTERM remove every registered path
// and then end the process as the signal would have, so Ctrl-C during a
// write leaves the earlier result or none, never a stray temporary.
#ifndef CAPPLAN_COMMON_TEMP_FILES_H_
#define CAPPLAN_COMMON_TEMP_FILES_H_

#include <string>

namespace capplan {

// Called once by main().
void InstallInterruptCleanup();

// A registered path, removed on SIGINT/SIGTERM until released (files are
// unlinked, folders removed once empty: register a folder before its files).
// Registration is best effort: beyond a fixed number of concurrent paths
// (far more than --jobs threads write at once) a path is not tracked.
class TempPath {
 public:
  TempPath(const std::string& path, bool is_dir);
  ~TempPath();
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;

 private:
  int slot_ = -1;
};

// Test hook for the disk-full path: when the environment sets
// CAPPLAN_FAULT_ENOSPC_AT=N, the N-th file written by this process (1 =
// the first) fails as if the disk were full. Returns true for that write.
bool InjectedDiskFull();

}  // namespace capplan

#endif  // CAPPLAN_COMMON_TEMP_FILES_H_
