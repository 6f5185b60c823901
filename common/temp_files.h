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

// Test hooks at a chosen file, so tests need no timing: called once per file
// written, after its bytes and before its rename (the temporary is still
// registered). With CAPPLAN_FAULT_ENOSPC_AT=N in the environment the N-th
// file written by this process (1 = the first) fails as if the disk were
// full: returns true for that write. With CAPPLAN_FAULT_SIGINT_AT=N the
// process gets SIGINT at the N-th file, as if Ctrl-C came right then.
bool InjectWriteFaults();

}  // namespace capplan

#endif  // CAPPLAN_COMMON_TEMP_FILES_H_
