// CUDA event timer and device queries; see cuda_timer.h.
#include <cuda_runtime.h>

#include <vector>

#include "kernels/harness/cuda_timer.h"

namespace capplan::kernels {

namespace {
Status Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::Ok();
  return Status::Internal(std::string(what) + ": " + cudaGetErrorString(e));
}
}  // namespace

Status CudaLastError(const char* what) { return Check(cudaGetLastError(), what); }

std::string CudaDeviceUnavailableReason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return std::string("no CUDA device: ") + cudaGetErrorString(e);
  }
  if (n == 0) return "no CUDA device: cudaGetDeviceCount returned 0";
  return "";
}

Result<CudaDeviceInfo> GetCudaDeviceInfo() {
  const std::string why = CudaDeviceUnavailableReason();
  if (!why.empty()) return Status::Unavailable(why);
  int dev = 0;
  CAPPLAN_RETURN_IF_ERROR(Check(cudaGetDevice(&dev), "cudaGetDevice"));
  cudaDeviceProp p{};
  CAPPLAN_RETURN_IF_ERROR(Check(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties"));
  CudaDeviceInfo info;
  info.name = p.name;
  info.sm_count = p.multiProcessorCount;
  info.l2_bytes = p.l2CacheSize;
  int clock_khz = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev) == cudaSuccess) {
    info.sm_clock_mhz = clock_khz / 1000;
  }
  int v = 0;
  CAPPLAN_RETURN_IF_ERROR(Check(cudaDriverGetVersion(&v), "cudaDriverGetVersion"));
  // cudaDriverGetVersion reports the CUDA API level the driver supports
  // (1000*major + 10*minor), not the driver build; run.sh records the
  // nvidia-smi driver string when available.
  info.driver = "cuda-api " + std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
  CAPPLAN_RETURN_IF_ERROR(Check(cudaRuntimeGetVersion(&v), "cudaRuntimeGetVersion"));
  info.runtime = std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
  return info;
}

Result<TimingStats> TimeCuda(const std::function<Status()>& launch, const CudaTimerOptions& opt) {
  void* flush = nullptr;
  size_t flush_bytes = 0;
  if (opt.flush_l2) {
    CAPPLAN_ASSIGN_OR_RETURN(CudaDeviceInfo info, GetCudaDeviceInfo());
    flush_bytes = 2 * static_cast<size_t>(info.l2_bytes > 0 ? info.l2_bytes : (64 << 20));
    CAPPLAN_RETURN_IF_ERROR(Check(cudaMalloc(&flush, flush_bytes), "cudaMalloc(L2 flush)"));
  }
  cudaEvent_t start, stop;
  (void)cudaEventCreate(&start);
  (void)cudaEventCreate(&stop);
  std::vector<double> us;
  // A lambda so every CUDA error returns early while the events and the
  // flush buffer are still released below.
  auto timed = [&]() -> Status {
    for (int i = 0; i < opt.warmup; ++i) CAPPLAN_RETURN_IF_ERROR(launch());
    CAPPLAN_RETURN_IF_ERROR(Check(cudaDeviceSynchronize(), "warm-up"));
    for (int i = 0; i < opt.repeats; ++i) {
      if (flush) {
        CAPPLAN_RETURN_IF_ERROR(
            Check(cudaMemsetAsync(flush, i & 0xff, flush_bytes), "L2 flush memset"));
      }
      CAPPLAN_RETURN_IF_ERROR(Check(cudaEventRecord(start), "cudaEventRecord"));
      CAPPLAN_RETURN_IF_ERROR(launch());
      CAPPLAN_RETURN_IF_ERROR(Check(cudaEventRecord(stop), "cudaEventRecord"));
      CAPPLAN_RETURN_IF_ERROR(Check(cudaEventSynchronize(stop), "kernel run"));
      float ms = 0.0f;
      CAPPLAN_RETURN_IF_ERROR(
          Check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime"));
      us.push_back(1000.0 * ms);
    }
    return Status::Ok();
  };
  const Status st = timed();
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  if (flush) (void)cudaFree(flush);
  CAPPLAN_RETURN_IF_ERROR(st);
  return Summarize(std::move(us));
}

}  // namespace capplan::kernels
