// CUDA event timer (only with CAPPLAN_HAVE_CUDA): warm-up launches, then N
// repeats, each preceded by an L2 flush (a kernel reading a buffer of 2x the
// L2 size, outside the timed region: reading leaves only clean lines, so no
// write-back of the flush lands in the timed kernel; the buffer is allocated
// once per process) so every repeat reads KV/weights from HBM
// ("cold" timing as FlashInfer's nvbench runs do,
// https://flashinfer.ai/2024/02/02/introduce-flashinfer.html), each
// repeat bracketed by its own event pair on the default stream.
#ifndef CAPPLAN_KERNELS_HARNESS_CUDA_TIMER_H_
#define CAPPLAN_KERNELS_HARNESS_CUDA_TIMER_H_

#ifdef CAPPLAN_HAVE_CUDA

#include <functional>
#include <string>

#include "common/status.h"
#include "kernels/harness/timing.h"

namespace capplan::kernels {

struct CudaTimerOptions {
  int warmup = 3;
  int repeats = 20;
  bool flush_l2 = true;
};

// `launch` enqueues the kernel(s) on the default stream and returns the
// launch status (it must not synchronise). Errors from CUDA calls become
// Internal statuses naming the call.
Result<TimingStats> TimeCuda(const std::function<Status()>& launch, const CudaTimerOptions& opt);

// Device facts the harness and planners need, read from the driver.
struct CudaDeviceInfo {
  std::string name;
  std::string driver;   // e.g. "580.159" (from cudaDriverGetVersion: major.minor)
  std::string runtime;  // e.g. "13.0"
  int sm_count = 0;
  int l2_bytes = 0;
  int sm_clock_mhz = 0;
};
// Unavailable when no device is present.
Result<CudaDeviceInfo> GetCudaDeviceInfo();
// Returns "" when a device is usable, else the reason (for GTEST_SKIP).
std::string CudaDeviceUnavailableReason();
// Wraps the last launch error / a runtime error code as a Status.
Status CudaLastError(const char* what);
// After a failed case: Ok when the device can go on (a non-sticky error is
// cleared), else the sticky error (an illegal address, say) that poisons
// every later CUDA call of this process.
Status CudaDeviceHealthy();

}  // namespace capplan::kernels

#endif  // CAPPLAN_HAVE_CUDA
#endif  // CAPPLAN_KERNELS_HARNESS_CUDA_TIMER_H_
