#include "kernels/formats/int4.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace capplan::kernels {

Result<Int4Weights> QuantizeInt4(const float* w, int rows, int cols, int group, bool symmetric) {
  if (group != 32 && group != 128) {
    return Status::Usage("QuantizeInt4: group size must be 32 or 128, got " +
                         std::to_string(group));
  }
  if (rows <= 0 || cols <= 0 || cols % group != 0) {
    return Status::Usage("QuantizeInt4: cols (" + std::to_string(cols) +
                         ") must be a positive multiple of the group size " +
                         std::to_string(group));
  }
  Int4Weights q;
  q.rows = rows;
  q.cols = cols;
  q.group = group;
  q.symmetric = symmetric;
  const int gpr = cols / group;
  q.packed.assign(static_cast<size_t>(rows) * cols / 2, 0);
  q.scales.resize(static_cast<size_t>(rows) * gpr);
  if (!symmetric) q.zeros.resize(static_cast<size_t>(rows) * gpr);
  for (int r = 0; r < rows; ++r) {
    for (int g = 0; g < gpr; ++g) {
      const float* src = w + static_cast<size_t>(r) * cols + static_cast<size_t>(g) * group;
      float lo = 0.0f, hi = 0.0f, amax = 0.0f;
      for (int i = 0; i < group; ++i) {
        if (!std::isfinite(src[i])) {
          return Status::Usage("QuantizeInt4: non-finite weight at [" + std::to_string(r) + "," +
                               std::to_string(g * group + i) + "]");
        }
        lo = std::min(lo, src[i]);
        hi = std::max(hi, src[i]);
        amax = std::max(amax, std::fabs(src[i]));
      }
      float scale;
      int zero;
      if (symmetric) {
        scale = RoundToBf16(amax > 0.0f ? amax / 7.0f : 1.0f);
        zero = kInt4SymBias;
      } else {
        // lo <= 0 <= hi by construction, so zero is representable.
        scale = RoundToBf16(hi > lo ? (hi - lo) / 15.0f : 1.0f);
        zero = static_cast<int>(std::clamp(std::nearbyint(-lo / scale), 0.0f, 15.0f));
        q.zeros[static_cast<size_t>(r) * gpr + g] = static_cast<uint8_t>(zero);
      }
      q.scales[static_cast<size_t>(r) * gpr + g] = ToBf16(scale);
      for (int i = 0; i < group; ++i) {
        const float v = std::nearbyint(src[i] / scale) + static_cast<float>(zero);
        const auto nib = static_cast<uint8_t>(std::clamp(v, 0.0f, 15.0f));
        const size_t idx = static_cast<size_t>(r) * cols + static_cast<size_t>(g) * group + i;
        q.packed[idx >> 1] |= (idx & 1) ? static_cast<uint8_t>(nib << 4) : nib;
      }
    }
  }
  return q;
}

void DequantizeInt4(const Int4Weights& q, float* out) {
  const int gpr = q.groups_per_row();
  for (int r = 0; r < q.rows; ++r) {
    for (int c = 0; c < q.cols; ++c) {
      const size_t gi = static_cast<size_t>(r) * gpr + c / q.group;
      const int zero = q.symmetric ? kInt4SymBias : q.zeros[gi];
      const size_t idx = static_cast<size_t>(r) * q.cols + c;
      out[idx] = Int4Dequant(Int4Nibble(q.packed.data(), idx), ToFloat(q.scales[gi]), zero);
    }
  }
}

double Int4StorageBytes(const Int4Weights& q) {
  return static_cast<double>(q.packed.size()) + 2.0 * q.scales.size() +
         static_cast<double>(q.zeros.size());
}

}  // namespace capplan::kernels
