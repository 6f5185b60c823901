// Device kernels of the MoE path around the grouped GEMM (moe_cuda.h).
// All are memory-bound elementwise passes; bytes per call:
//   gather:  rows*H*2 read + rows*H*2 written
//   quant:   rows*C*2 read + rows*C + rows*ceil(C/128)*4 written
//   silu:    rows*2I*2 read + rows*I*2 written (FLOPs ~ rows*I*(exp + 3))
//   combine: T*k*H*2 read (+ T*H*2 shared) + T*H*2 written (FLOPs 2*T*k*H)
#include <string>

#include "kernels/formats/bf16.h"
#include "kernels/formats/fp8.h"
#include "kernels/moe/moe_cuda.h"

namespace capplan::kernels {
namespace {

constexpr int kGroup = 128;  // 1x128 activation groups (deepseek-ai/DeepGEMM README.md)

Status LaunchError(const char* what) {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? Status::Ok()
                          : Status::Internal(std::string(what) + ": " + cudaGetErrorString(e));
}

int GridFor(size_t n, int threads) {
  const size_t b = (n + threads - 1) / threads;
  return static_cast<int>(b < 65535 ? b : 65535);
}

__global__ void GatherRowsKernel(const uint16_t* x, const int* row_token, int rows, int hidden,
                                 uint16_t* out) {
  const size_t total = static_cast<size_t>(rows) * hidden;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t r = i / hidden, c = i % hidden;
    out[i] = x[static_cast<size_t>(row_token[r]) * hidden + c];
  }
}

// One warp per (row, 128-column group): amax by shuffles, then the same
// scale and rounding as the CPU quantizer (x / scale, saturating RNE).
__global__ void QuantRowwise128Kernel(const uint16_t* x, int rows, int cols, uint8_t* codes,
                                      float* scales) {
  const int groups = (cols + kGroup - 1) / kGroup;
  const long warp_id = (blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp_id >= static_cast<long>(rows) * groups) return;
  const int r = static_cast<int>(warp_id / groups), g = static_cast<int>(warp_id % groups);
  const int c0 = g * kGroup;
  float v[4];
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int c = c0 + lane + 32 * i;
    v[i] = c < cols ? Bf16BitsToFloat(x[static_cast<size_t>(r) * cols + c]) : 0.0f;
    amax = fmaxf(amax, fabsf(v[i]));
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  const float s = Fp8ScaleForAmax(amax);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int c = c0 + lane + 32 * i;
    if (c < cols) codes[static_cast<size_t>(r) * cols + c] = FloatToFp8E4m3(v[i] / s);
  }
  if (lane == 0) scales[static_cast<size_t>(r) * groups + g] = s;
}

__global__ void SiluMulKernel(const uint16_t* gu, int rows, int inter, uint16_t* h) {
  const size_t total = static_cast<size_t>(rows) * inter;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t r = i / inter, c = i % inter;
    const float g = Bf16BitsToFloat(gu[r * 2 * inter + c]);
    const float u = Bf16BitsToFloat(gu[r * 2 * inter + inter + c]);
    h[i] = FloatToBf16Bits(g / (1.0f + expf(-g)) * u);
  }
}

__global__ void CombineKernel(const uint16_t* o, const int* slot_row, const float* w,
                              const uint16_t* shared, int tokens, int top_k, int hidden,
                              uint16_t* y) {
  const size_t total = static_cast<size_t>(tokens) * hidden;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t t = i / hidden, c = i % hidden;
    float acc = 0.0f;
    for (int j = 0; j < top_k; ++j) {
      const size_t pair = t * top_k + j;
      acc += w[pair] * Bf16BitsToFloat(o[static_cast<size_t>(slot_row[pair]) * hidden + c]);
    }
    if (shared) acc += Bf16BitsToFloat(shared[i]);
    y[i] = FloatToBf16Bits(acc);
  }
}

}  // namespace

Status LaunchGatherRows(const uint16_t* x, const int* row_token, int rows, int hidden,
                        uint16_t* out, cudaStream_t s) {
  if (rows == 0) return Status::Ok();
  GatherRowsKernel<<<GridFor(static_cast<size_t>(rows) * hidden, 256), 256, 0, s>>>(
      x, row_token, rows, hidden, out);
  return LaunchError("GatherRowsKernel");
}

Status LaunchQuantFp8Rowwise128(const uint16_t* x, int rows, int cols, uint8_t* codes,
                                float* scales, cudaStream_t s) {
  if (rows == 0) return Status::Ok();
  const long warps = static_cast<long>(rows) * ((cols + kGroup - 1) / kGroup);
  const long blocks = (warps * 32 + 255) / 256;
  if (blocks > 0x7fffffffL) return Status::Invalid("quant: too many rows");
  QuantRowwise128Kernel<<<static_cast<unsigned>(blocks), 256, 0, s>>>(x, rows, cols, codes, scales);
  return LaunchError("QuantRowwise128Kernel");
}

Status LaunchSiluMul(const uint16_t* gu, int rows, int inter, uint16_t* h, cudaStream_t s) {
  if (rows == 0) return Status::Ok();
  SiluMulKernel<<<GridFor(static_cast<size_t>(rows) * inter, 256), 256, 0, s>>>(gu, rows, inter, h);
  return LaunchError("SiluMulKernel");
}

Status LaunchMoeCombine(const uint16_t* o, const int* slot_row, const float* weights,
                        const uint16_t* shared, int tokens, int top_k, int hidden, uint16_t* y,
                        cudaStream_t s) {
  if (tokens == 0) return Status::Ok();
  CombineKernel<<<GridFor(static_cast<size_t>(tokens) * hidden, 256), 256, 0, s>>>(
      o, slot_row, weights, shared, tokens, top_k, hidden, y);
  return LaunchError("CombineKernel");
}

}  // namespace capplan::kernels
