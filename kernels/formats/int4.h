// INT4 weight packing for weight-only quantised GEMMs (W4A16), following the
// common GPTQ/AWQ conventions (type names from vLLM's
// vllm/model_executor/layers/quantization/utils/machete_utils.py):
//   symmetric  ("uint4b8"): stored nibble q in 0..15 means (q - 8) * scale;
//   asymmetric ("uint4")  : stored nibble q means (q - zero) * scale with a
//                           per-group zero point 0..15.
// Weights are row-major [rows = N outputs, cols = K inputs]; groups of 32 or
// 128 consecutive K elements in one row share a BF16 scale (and zero). Two
// nibbles per byte, element 2j in the low nibble, 2j+1 in the high nibble.
//
// Scale choice: symmetric uses scale = amax / 7 so +-amax map to +-7 exactly
// (code 0, i.e. -8, stays unused, as in GPTQ's symmetric mode); asymmetric
// uses scale = (max - min) / 15 and zero = round(-min / scale). Scales are
// rounded to BF16 *before* quantising so the stored scale is the one used.
#ifndef CAPPLAN_KERNELS_FORMATS_INT4_H_
#define CAPPLAN_KERNELS_FORMATS_INT4_H_

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "kernels/formats/bf16.h"
#include "kernels/formats/hd.h"

namespace capplan::kernels {

inline constexpr int kInt4SymBias = 8;  // uint4b8

struct Int4Weights {
  int rows = 0;
  int cols = 0;
  int group = 0;  // 32 or 128
  bool symmetric = true;
  std::vector<uint8_t> packed;  // rows * cols / 2
  std::vector<Bf16> scales;     // rows * (cols / group)
  std::vector<uint8_t> zeros;   // rows * (cols / group), asymmetric only (one per byte)
  int groups_per_row() const { return cols / group; }
};

CAPPLAN_HD uint8_t Int4Nibble(const uint8_t* packed, size_t index) {
  const uint8_t b = packed[index >> 1];
  return (index & 1) ? static_cast<uint8_t>(b >> 4) : static_cast<uint8_t>(b & 0xfu);
}

// Dequantised value of element `index` of a packed buffer with this group's
// scale and zero (zero = 8 for symmetric).
CAPPLAN_HD float Int4Dequant(uint8_t nibble, float scale, int zero) {
  return static_cast<float>(static_cast<int>(nibble) - zero) * scale;
}

// Quantises w [rows, cols]. Usage error unless group is 32 or 128, cols is a
// multiple of group, and every input is finite.
Result<Int4Weights> QuantizeInt4(const float* w, int rows, int cols, int group, bool symmetric);
// out [rows, cols] = dequantised weights.
void DequantizeInt4(const Int4Weights& q, float* out);
// HBM bytes of the packed form (nibbles + BF16 scales + zeros), the figure
// roofline arithmetic for W4A16 GEMMs uses.
double Int4StorageBytes(const Int4Weights& q);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_FORMATS_INT4_H_
