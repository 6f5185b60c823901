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

Status CudaDeviceHealthy() {
  if (cudaDeviceSynchronize() == cudaSuccess) {
    (void)cudaGetLastError();
    return Status::Ok();
  }
  (void)cudaGetLastError();  // clears a non-sticky error; a sticky one stays
  const cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) return Status::Ok();
  return Status::Internal(std::string("sticky CUDA error, the device cannot go on: ") +
                          cudaGetErrorString(e));
}

namespace {

// Reads every 16-byte word; the impossible compare keeps the loads alive.
__global__ void ReadFlushKernel(const int4* p, size_t n, int* sink) {
  int acc = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7f3a5c91) *sink = acc;
}

struct FlushBuffer {
  int4* data = nullptr;
  size_t words = 0;
  int* sink = nullptr;
};

// One buffer of 2x L2 for the whole process (never freed: the driver
// releases it at exit), zero-filled once so the reads see defined bytes.
Result<FlushBuffer*> GetFlushBuffer() {
  static FlushBuffer buf;
  if (buf.data != nullptr) return &buf;
  CAPPLAN_ASSIGN_OR_RETURN(CudaDeviceInfo info, GetCudaDeviceInfo());
  const size_t bytes = 2 * static_cast<size_t>(info.l2_bytes > 0 ? info.l2_bytes : (64 << 20));
  void* p = nullptr;
  CAPPLAN_RETURN_IF_ERROR(Check(cudaMalloc(&p, bytes + 16), "cudaMalloc(L2 flush)"));
  CAPPLAN_RETURN_IF_ERROR(Check(cudaMemset(p, 0, bytes + 16), "cudaMemset(L2 flush)"));
  buf.data = static_cast<int4*>(p);
  buf.words = bytes / sizeof(int4);
  buf.sink = reinterpret_cast<int*>(static_cast<char*>(p) + bytes);
  return &buf;
}

}  // namespace

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
  FlushBuffer* flush = nullptr;
  if (opt.flush_l2) {
    CAPPLAN_ASSIGN_OR_RETURN(flush, GetFlushBuffer());
  }
  cudaEvent_t start, stop;
  CAPPLAN_RETURN_IF_ERROR(Check(cudaEventCreate(&start), "cudaEventCreate"));
  if (Status st = Check(cudaEventCreate(&stop), "cudaEventCreate"); !st.ok()) {
    (void)cudaEventDestroy(start);
    return st;
  }
  std::vector<double> us;
  // A lambda so every CUDA error returns early while the events are still
  // released below.
  auto timed = [&]() -> Status {
    for (int i = 0; i < opt.warmup; ++i) CAPPLAN_RETURN_IF_ERROR(launch());
    CAPPLAN_RETURN_IF_ERROR(Check(cudaDeviceSynchronize(), "warm-up"));
    for (int i = 0; i < opt.repeats; ++i) {
      if (flush) {
        ReadFlushKernel<<<1024, 256>>>(flush->data, flush->words, flush->sink);
        CAPPLAN_RETURN_IF_ERROR(Check(cudaGetLastError(), "L2 flush read"));
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
  CAPPLAN_RETURN_IF_ERROR(st);
  return Summarize(std::move(us));
}

}  // namespace capplan::kernels
