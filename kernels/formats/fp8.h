// FP8 E4M3 ("E4M3FN" in the OCP 8-bit floating point specification v1.0,
// 2023; the same encoding as cuda_fp8.h's __nv_fp8_e4m3 and PyTorch's
// float8_e4m3fn): 1 sign, 4 exponent (bias 7), 3 mantissa bits; no
// infinities; S.1111.111 is NaN, so the largest finite code is S.1111.110 =
// 1.75 * 2^8 = 448; subnormals step by 2^-9.
//
// Conversions here are saturating round-to-nearest-even in both directions:
// every finite float (and +-Inf) maps to the nearest code with ties going to
// the even mantissa, values beyond +-448 clamp to +-448, NaN stays NaN. That
// is the "satfinite" mode engines use for KV caches and activations, and it
// matches __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3).
//
// Scales: quantised value q = Fp8(x / scale), dequantised x' = q * scale with
// scale = amax / 448 over a block; see Fp8Blocking for the granularities.
#ifndef CAPPLAN_KERNELS_FORMATS_FP8_H_
#define CAPPLAN_KERNELS_FORMATS_FP8_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/formats/hd.h"

namespace capplan::kernels {

// Format constants, all derived from the bit layout above (OCP FP8 v1.0).
inline constexpr int kFp8E4m3ExpBias = 7;
inline constexpr int kFp8E4m3MantBits = 3;
inline constexpr uint8_t kFp8E4m3MaxCode = 0x7e;      // S.1111.110
inline constexpr uint8_t kFp8E4m3NanCode = 0x7f;      // S.1111.111
inline constexpr float kFp8E4m3Max = 1.75f * 256.0f;  // = 448
// Relative spacing of normal codes: 2^-3, so round-to-nearest error <= 2^-4.
inline constexpr float kFp8E4m3RelErr = 1.0f / 16.0f;

CAPPLAN_HD float Fp8E4m3ToFloat(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
  const uint32_t exp = (code >> kFp8E4m3MantBits) & 0xfu;
  const uint32_t mant = code & 0x7u;
  if (exp == 0xfu && mant == 0x7u) return BitsToFloat(sign | 0x7fc00000u);
  if (exp == 0) {
    // Subnormal: mant * 2^-9, exact in float.
    const float v = static_cast<float>(mant) * (1.0f / 512.0f);
    return BitsToFloat(FloatToBits(v) | sign);
  }
  // Normal: rebias the exponent (127 - 7 = 120) and left-align the mantissa.
  return BitsToFloat(sign | ((exp + 120u) << 23) | (mant << 20));
}

CAPPLAN_HD uint8_t FloatToFp8E4m3(float f) {
  uint32_t u = FloatToBits(f);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return sign | kFp8E4m3NanCode;
  if (u >= 0x43e00000u) return sign | kFp8E4m3MaxCode;  // >= 448.0f (and Inf)
  if (u < 0x3c800000u) {
    // Below the smallest normal 2^-6: count subnormal steps of 2^-9. The
    // product is exact and in [0, 8); ties round to even; 8 is the code of
    // 2^-6 itself, which is also the correct encoding.
    const float steps = RoundNearestEven(BitsToFloat(u) * 512.0f);
    return sign | static_cast<uint8_t>(steps);
  }
  // Normal: round the 23-bit mantissa to 3 bits (ties to even on bit 20);
  // a carry out of the mantissa bumps the exponent, which is what we want.
  u += 0x7ffffu + ((u >> 20) & 1u);
  const uint32_t r = (u >> 20) - (120u << 3);
  return sign | static_cast<uint8_t>(r);
}

CAPPLAN_HD float RoundToFp8E4m3(float f) { return Fp8E4m3ToFloat(FloatToFp8E4m3(f)); }

// Scale granularity as a block shape over a row-major [rows, cols] tensor;
// one FP32 scale per block (DeepGEMM keeps FP32 scales on SM90:
// deepseek-ai/DeepGEMM README.md). Blocks at the edges may be partial.
struct Fp8Blocking {
  int block_rows = 0;  // <= 0 means "all rows"
  int block_cols = 0;  // <= 0 means "all cols"
  static Fp8Blocking PerTensor() { return {0, 0}; }
  static Fp8Blocking PerToken() { return {1, 0}; }         // one scale per row
  static Fp8Blocking TokenGroup(int g) { return {1, g}; }  // 1 x g (activations, MLA latent)
  static Fp8Blocking Block128() { return {128, 128}; }     // 128 x 128 (weights)
};

struct Fp8Tensor {
  int rows = 0;
  int cols = 0;
  Fp8Blocking blocking;
  int scale_rows = 0;          // number of row blocks
  int scale_cols = 0;          // number of column blocks
  std::vector<uint8_t> codes;  // rows * cols, row-major
  std::vector<float> scales;   // scale_rows * scale_cols, row-major
  float ScaleAt(int r, int c) const;
};

// Scale for a block whose largest magnitude is amax: amax / 448, or 1 when
// the block is all zeros (any scale represents zeros exactly).
CAPPLAN_HD float Fp8ScaleForAmax(float amax) { return amax > 0.0f ? amax / kFp8E4m3Max : 1.0f; }

// Quantises x [rows, cols] with one scale per block. Invalid on bad shapes or
// non-finite input (a NaN amax would poison a whole block's scale).
Result<Fp8Tensor> QuantizeFp8(const float* x, int rows, int cols, Fp8Blocking blocking);
// x'[i] = code[i] * scale(block of i).
void DequantizeFp8(const Fp8Tensor& t, float* out);

std::string Fp8BlockingName(Fp8Blocking b);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_FORMATS_FP8_H_
