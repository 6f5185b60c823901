// Owning device allocation for the GEMM/MoE host code, suites and tests
// (only with CAPPLAN_HAVE_CUDA). Upload/Download wrap cudaMemcpy and return
// Status, so no CUDA error goes unchecked. Allocate and Upload keep the
// allocation when it is large enough (size() shrinks, the capacity stays),
// so per-step uploads of a plan never cudaFree/cudaMalloc inside a timed
// forward once the buffer has been sized for the largest step.
#ifndef CAPPLAN_KERNELS_GEMM_DEVICE_BUFFER_H_
#define CAPPLAN_KERNELS_GEMM_DEVICE_BUFFER_H_

#ifdef CAPPLAN_HAVE_CUDA

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace capplan::kernels {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { Reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)),
        n_(std::exchange(o.n_, 0)),
        cap_(std::exchange(o.cap_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      Reset();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
      cap_ = std::exchange(o.cap_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  Status Allocate(size_t n) {
    if (n <= cap_) {
      n_ = n;
      return Status::Ok();
    }
    Reset();
    const cudaError_t e = cudaMalloc(&p_, n * sizeof(T));
    if (e != cudaSuccess) {
      p_ = nullptr;
      return Status::Internal("cudaMalloc(" + std::to_string(n * sizeof(T)) +
                              " B): " + cudaGetErrorString(e));
    }
    n_ = cap_ = n;
    return Status::Ok();
  }
  Status Upload(const T* src, size_t n) {
    CAPPLAN_RETURN_IF_ERROR(Allocate(n));
    if (n == 0) return Status::Ok();
    const cudaError_t e = cudaMemcpy(p_, src, n * sizeof(T), cudaMemcpyHostToDevice);
    return e == cudaSuccess
               ? Status::Ok()
               : Status::Internal(std::string("cudaMemcpy H2D: ") + cudaGetErrorString(e));
  }
  Status Upload(const std::vector<T>& v) { return Upload(v.data(), v.size()); }
  Status Download(std::vector<T>* out) const {
    out->resize(n_);
    if (n_ == 0) return Status::Ok();
    const cudaError_t e = cudaMemcpy(out->data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost);
    return e == cudaSuccess
               ? Status::Ok()
               : Status::Internal(std::string("cudaMemcpy D2H: ") + cudaGetErrorString(e));
  }
  // Poison: 0xff bytes are NaN in FP32, BF16 and e4m3 alike.
  Status Poison() {
    if (n_ == 0) return Status::Ok();
    const cudaError_t e = cudaMemset(p_, 0xff, n_ * sizeof(T));
    return e == cudaSuccess ? Status::Ok()
                            : Status::Internal(std::string("cudaMemset: ") + cudaGetErrorString(e));
  }
  T* get() const { return static_cast<T*>(p_); }
  size_t size() const { return n_; }
  size_t capacity() const { return cap_; }

 private:
  void Reset() {
    if (p_) cudaFree(p_);
    p_ = nullptr;
    n_ = cap_ = 0;
  }
  void* p_ = nullptr;
  size_t n_ = 0;
  size_t cap_ = 0;
};

}  // namespace capplan::kernels

#endif  // CAPPLAN_HAVE_CUDA
#endif  // CAPPLAN_KERNELS_GEMM_DEVICE_BUFFER_H_
