// BF16 (bfloat16): 1 sign, 8 exponent, 7 mantissa bits; the upper half of an
// IEEE-754 binary32. Conversion from float rounds to nearest, ties to even,
// and overflows to infinity like any IEEE narrowing (no saturation: BF16 has
// float's exponent range, so only values above ~3.39e38 overflow).
// Source: Google Brain bfloat16 definition / Intel BF16 whitepaper (2018);
// the bit layout is the same as cuda_bf16.h's __nv_bfloat16.
#ifndef CAPPLAN_KERNELS_FORMATS_BF16_H_
#define CAPPLAN_KERNELS_FORMATS_BF16_H_

#include <cstdint>

#include "kernels/formats/hd.h"

namespace capplan::kernels {

// Raw BF16 bits. A struct (not uint16_t) so overloads cannot silently mix a
// BF16 buffer with an integer buffer.
struct Bf16 {
  uint16_t bits = 0;
};

CAPPLAN_HD uint16_t FloatToBf16Bits(float f) {
  uint32_t u = FloatToBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    // NaN: keep the sign, force a quiet NaN so truncation cannot make it Inf.
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  }
  // Ties to even: add 0x7fff plus the lowest kept bit, then truncate.
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

CAPPLAN_HD float Bf16BitsToFloat(uint16_t b) { return BitsToFloat(static_cast<uint32_t>(b) << 16); }

CAPPLAN_HD Bf16 ToBf16(float f) { return Bf16{FloatToBf16Bits(f)}; }
CAPPLAN_HD float ToFloat(Bf16 b) { return Bf16BitsToFloat(b.bits); }
// Float -> BF16 -> float: what a value becomes when stored as BF16.
CAPPLAN_HD float RoundToBf16(float f) { return Bf16BitsToFloat(FloatToBf16Bits(f)); }

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_FORMATS_BF16_H_
