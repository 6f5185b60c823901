// Device-side random fills (device_buffer.h).
#include "kernels/formats/bf16.h"
#include "kernels/formats/fp8.h"
#include "kernels/harness/cuda_timer.h"
#include "kernels/harness/device_buffer.h"

namespace capplan::kernels {

namespace {

__device__ __forceinline__ uint32_t Hash(uint32_t x) {
  // lowbias32 (Chris Wellons' integer hash): cheap, well mixed.
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

__device__ __forceinline__ float Uniform(uint32_t h) { return (h >> 8) * (1.0f / 16777216.0f); }

__global__ void FillBf16Kernel(uint16_t* dst, size_t n, uint32_t seed, float stddev) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint32_t h = Hash(static_cast<uint32_t>(i) ^ Hash(seed + static_cast<uint32_t>(i >> 32)));
    // Irwin-Hall with 4 uniforms: mean 2, variance 1/3.
    const float s = Uniform(h) + Uniform(Hash(h + 1)) + Uniform(Hash(h + 2)) + Uniform(Hash(h + 3));
    dst[i] = FloatToBf16Bits((s - 2.0f) * 1.7320508f * stddev);
  }
}

__global__ void FillFp8Kernel(uint8_t* dst, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint32_t h = Hash(static_cast<uint32_t>(i) ^ Hash(seed + static_cast<uint32_t>(i >> 32)));
    const float s = Uniform(h) + Uniform(Hash(h + 1)) + Uniform(Hash(h + 2)) + Uniform(Hash(h + 3));
    // ~N(0, 1) scaled so 4.5 sigma reaches 448: a calibrated per-tensor scale.
    dst[i] = FloatToFp8E4m3((s - 2.0f) * 1.7320508f * (kFp8E4m3Max / 4.5f));
  }
}

int Blocks(size_t n) { return static_cast<int>(std::min<size_t>((n + 255) / 256, 65535)); }

}  // namespace

Status FillRandomBf16Device(void* dst, size_t n, uint32_t seed, float stddev) {
  if (n == 0) return Status::Ok();
  FillBf16Kernel<<<Blocks(n), 256>>>(static_cast<uint16_t*>(dst), n, seed, stddev);
  return CudaLastError("FillRandomBf16Device");
}

Status FillRandomFp8Device(void* dst, size_t n, uint32_t seed) {
  if (n == 0) return Status::Ok();
  FillFp8Kernel<<<Blocks(n), 256>>>(static_cast<uint8_t*>(dst), n, seed);
  return CudaLastError("FillRandomFp8Device");
}

}  // namespace capplan::kernels
