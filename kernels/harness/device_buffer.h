// Minimal RAII device buffer and random fills for tests and suites (only
// with CAPPLAN_HAVE_CUDA). Inputs are generated on the device so large
// sweeps do not pay host-to-device copies; small cases copy back to run the
// CPU reference on exactly the same bytes.
#ifndef CAPPLAN_KERNELS_HARNESS_DEVICE_BUFFER_H_
#define CAPPLAN_KERNELS_HARNESS_DEVICE_BUFFER_H_

#ifdef CAPPLAN_HAVE_CUDA

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace capplan::kernels {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { Reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }

  Status Allocate(size_t bytes) {
    Reset();
    if (bytes == 0) return Status::Ok();
    const cudaError_t e = cudaMalloc(&ptr_, bytes);
    if (e != cudaSuccess) {
      ptr_ = nullptr;
      return Status::Internal("cudaMalloc(" + std::to_string(bytes) +
                              "): " + cudaGetErrorString(e));
    }
    bytes_ = bytes;
    return Status::Ok();
  }
  template <typename T>
  Status Upload(const std::vector<T>& host) {
    CAPPLAN_RETURN_IF_ERROR(Allocate(host.size() * sizeof(T)));
    if (bytes_ == 0) return Status::Ok();
    return Wrap(cudaMemcpy(ptr_, host.data(), bytes_, cudaMemcpyHostToDevice), "upload");
  }
  template <typename T>
  Status Download(std::vector<T>* host) const {
    host->resize(bytes_ / sizeof(T));
    if (bytes_ == 0) return Status::Ok();
    return Wrap(cudaMemcpy(host->data(), ptr_, bytes_, cudaMemcpyDeviceToHost), "download");
  }
  // memset 0xff: NaN in FP32, BF16 and FP8 E4M3 (the poison value).
  Status Poison() {
    return bytes_ == 0 ? Status::Ok() : Wrap(cudaMemset(ptr_, 0xff, bytes_), "poison memset");
  }
  Status Zero() {
    return bytes_ == 0 ? Status::Ok() : Wrap(cudaMemset(ptr_, 0, bytes_), "zero memset");
  }

  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  void Reset() {
    if (ptr_) (void)cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }

 private:
  static Status Wrap(cudaError_t e, const char* what) {
    return e == cudaSuccess ? Status::Ok()
                            : Status::Internal(std::string(what) + ": " + cudaGetErrorString(e));
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Fills n BF16 values with a hash-based N(0, stddev)-like distribution
// (sum of uniforms), deterministic in seed.
Status FillRandomBf16Device(void* dst, size_t n, uint32_t seed, float stddev);
// Fills n FP8 E4M3 codes with random finite codes of magnitude <= 448*frac
// (never NaN), i.e. values a calibrated scale would produce.
Status FillRandomFp8Device(void* dst, size_t n, uint32_t seed);

}  // namespace capplan::kernels

#endif  // CAPPLAN_HAVE_CUDA
#endif  // CAPPLAN_KERNELS_HARNESS_DEVICE_BUFFER_H_
