#include "common/temp_files.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace capplan {

namespace {

constexpr int kSlots = 256;
constexpr size_t kMaxPath = 4096;

// A slot is free (0), being filled (1), a file (2) or a folder (3). The
// signal handler reads only slots in state 2 or 3, whose path is complete.
struct Slot {
  std::atomic<int> state{0};
  char path[kMaxPath];
};
Slot g_slots[kSlots];

extern "C" void OnInterrupt(int sig) {
  // Files first, then folders (deepest last registered first), with
  // async-signal-safe calls only.
  for (int i = kSlots - 1; i >= 0; --i) {
    if (g_slots[i].state.load(std::memory_order_acquire) == 2) ::unlink(g_slots[i].path);
  }
  for (int i = kSlots - 1; i >= 0; --i) {
    if (g_slots[i].state.load(std::memory_order_acquire) == 3) ::rmdir(g_slots[i].path);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void InstallInterruptCleanup() {
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

TempPath::TempPath(const std::string& path, bool is_dir) {
  if (path.size() >= kMaxPath) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!g_slots[i].state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(is_dir ? 3 : 2, std::memory_order_release);
    slot_ = i;
    return;
  }
}

TempPath::~TempPath() {
  if (slot_ >= 0) g_slots[slot_].state.store(0, std::memory_order_release);
}

bool InjectWriteFaults() {
  static const auto at = [](const char* name) {
    const char* v = std::getenv(name);
    return v == nullptr ? 0L : std::strtol(v, nullptr, 10);
  };
  static const long full_at = at("CAPPLAN_FAULT_ENOSPC_AT");
  static const long interrupt_at = at("CAPPLAN_FAULT_SIGINT_AT");
  static std::atomic<long> writes{0};
  const long n = ++writes;  // from 1, so an unset hook (0) never matches
  if (n == interrupt_at) ::raise(SIGINT);
  return n == full_at;
}

}  // namespace capplan
