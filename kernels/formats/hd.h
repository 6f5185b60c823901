// Portability helpers for code that runs on both host and device: the format
// conversions must give bit-identical results in CPU references and CUDA
// kernels, so they are written once as inline __host__ __device__ functions.
#ifndef CAPPLAN_KERNELS_FORMATS_HD_H_
#define CAPPLAN_KERNELS_FORMATS_HD_H_

#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define CAPPLAN_HD __host__ __device__ __forceinline__
#else
#define CAPPLAN_HD inline
#endif

namespace capplan::kernels {

CAPPLAN_HD uint32_t FloatToBits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
#endif
}

CAPPLAN_HD float BitsToFloat(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

// Round to nearest integer, ties to even (the IEEE default rounding mode);
// rintf is the one libm/CUDA function with that guarantee on both sides.
CAPPLAN_HD float RoundNearestEven(float x) {
#ifdef __CUDA_ARCH__
  return rintf(x);
#else
  return __builtin_rintf(x);
#endif
}

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_FORMATS_HD_H_
