// The RAII device buffer and random fills for the kernels, tests, suites
// and the engine (only with CAPPLAN_HAVE_CUDA). Inputs are generated on the device so large
// sweeps do not pay host-to-device copies; small cases copy back to run the
// CPU reference on exactly the same bytes.
#ifndef CAPPLAN_KERNELS_HARNESS_DEVICE_BUFFER_H_
#define CAPPLAN_KERNELS_HARNESS_DEVICE_BUFFER_H_

#ifdef CAPPLAN_HAVE_CUDA

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/status.h"

namespace capplan::kernels {

// The one owning device allocation of the kernels, suites, tests and the
// engine: DeviceBuffer<T> holds size() elements of T (DeviceBuffer<> is a
// byte buffer whose Upload/Download/as<U>() take any element type). Every
// CUDA call's result comes back as a Status. Allocate and Upload keep the
// allocation when it is large enough (size() shrinks, capacity() stays), so
// per-step uploads of a plan never cudaFree/cudaMalloc inside a timed
// forward once the buffer has been sized for the largest step.
template <typename T = uint8_t>
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

  // n elements of T.
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
    return Wrap(cudaMemcpy(p_, src, n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  Status Upload(const std::vector<T>& v) { return Upload(v.data(), v.size()); }
  // Another element type U (a byte buffer holding int32 page ids, say).
  template <typename U, typename = std::enable_if_t<!std::is_same_v<U, T>>>
  Status Upload(const std::vector<U>& v) {
    const size_t bytes = v.size() * sizeof(U);
    CAPPLAN_RETURN_IF_ERROR(Allocate((bytes + sizeof(T) - 1) / sizeof(T)));
    if (bytes == 0) return Status::Ok();
    return Wrap(cudaMemcpy(p_, v.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  template <typename U>
  Status Download(std::vector<U>* out) const {
    out->resize(bytes() / sizeof(U));
    if (out->empty()) return Status::Ok();
    return Wrap(cudaMemcpy(out->data(), p_, out->size() * sizeof(U), cudaMemcpyDeviceToHost),
                "cudaMemcpy D2H");
  }
  // Poison: 0xff bytes are NaN in FP32, BF16 and e4m3 alike.
  Status Poison() {
    return n_ == 0 ? Status::Ok() : Wrap(cudaMemset(p_, 0xff, bytes()), "poison memset");
  }
  Status Zero() { return n_ == 0 ? Status::Ok() : Wrap(cudaMemset(p_, 0, bytes()), "zero memset"); }

  T* get() const { return static_cast<T*>(p_); }
  template <typename U>
  U* as() const {
    return static_cast<U*>(p_);
  }
  size_t size() const { return n_; }
  size_t capacity() const { return cap_; }
  size_t bytes() const { return n_ * sizeof(T); }
  void Reset() {
    if (p_) (void)cudaFree(p_);
    p_ = nullptr;
    n_ = cap_ = 0;
  }

 private:
  static Status Wrap(cudaError_t e, const char* what) {
    return e == cudaSuccess ? Status::Ok()
                            : Status::Internal(std::string(what) + ": " + cudaGetErrorString(e));
  }
  void* p_ = nullptr;
  size_t n_ = 0;
  size_t cap_ = 0;
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
