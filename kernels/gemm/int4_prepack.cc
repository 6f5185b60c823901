#include "kernels/gemm/int4_prepack.h"

#include <string>

namespace capplan::kernels {

double Int4Prepacked::Bytes() const {
  return static_cast<double>(qweight.size()) * 4.0 + static_cast<double>(scales.size()) * 2.0 +
         static_cast<double>(zeros.size());
}

Result<Int4Prepacked> PrepackInt4(const Int4Weights& w) {
  if (w.rows <= 0 || w.cols <= 0 || w.group <= 0 || w.cols % w.group != 0 ||
      w.group % kInt4TileK != 0) {
    return Status::Invalid("PrepackInt4: need K (" + std::to_string(w.cols) +
                           ") a multiple of the group (" + std::to_string(w.group) +
                           ") and the group a multiple of " + std::to_string(kInt4TileK));
  }
  Int4Prepacked p;
  p.n = w.rows;
  p.k = w.cols;
  p.group = w.group;
  p.symmetric = w.symmetric;
  p.n_padded = (w.rows + kInt4TileN - 1) / kInt4TileN * kInt4TileN;
  const int kt_count = w.cols / kInt4TileK;
  const int groups = w.cols / w.group;
  p.qweight.assign(static_cast<size_t>(p.n_padded) * w.cols / 8, 0u);
  p.scales.assign(static_cast<size_t>(groups) * p.n_padded, Bf16{});
  if (!w.symmetric) p.zeros.assign(static_cast<size_t>(groups) * p.n_padded, 0);
  for (int n = 0; n < w.rows; ++n) {
    const int nt = n / kInt4TileN, r = n % kInt4TileN;
    for (int kt = 0; kt < kt_count; ++kt) {
      const size_t base = (static_cast<size_t>(nt) * kt_count + kt) * kInt4TileN * 4 + r * 4;
      for (int word = 0; word < 4; ++word) {
        uint32_t v = 0;
        for (int j = 0; j < 8; ++j) {
          const size_t idx = static_cast<size_t>(n) * w.cols + kt * kInt4TileK + word * 8 + j;
          v |= static_cast<uint32_t>(Int4Nibble(w.packed.data(), idx)) << (4 * j);
        }
        p.qweight[base + word] = v;
      }
    }
    for (int g = 0; g < groups; ++g) {
      const size_t src = static_cast<size_t>(n) * groups + g;
      const size_t dst = static_cast<size_t>(g) * p.n_padded + n;
      p.scales[dst] = w.scales[src];
      if (!w.symmetric) p.zeros[dst] = w.zeros[src];
    }
  }
  // Padded rows: symmetric code 0 with scale 0 is 0; keep them all-zero.
  return p;
}

Int4Weights UnpackInt4(const Int4Prepacked& p) {
  Int4Weights w;
  w.rows = p.n;
  w.cols = p.k;
  w.group = p.group;
  w.symmetric = p.symmetric;
  const int kt_count = p.k / kInt4TileK;
  const int groups = p.k / p.group;
  w.packed.assign(static_cast<size_t>(p.n) * p.k / 2, 0);
  w.scales.resize(static_cast<size_t>(p.n) * groups);
  if (!p.symmetric) w.zeros.resize(static_cast<size_t>(p.n) * groups);
  for (int n = 0; n < p.n; ++n) {
    const int nt = n / kInt4TileN, r = n % kInt4TileN;
    for (int c = 0; c < p.k; ++c) {
      const int kt = c / kInt4TileK, word = (c % kInt4TileK) / 8, j = c % 8;
      const uint32_t v =
          p.qweight[(static_cast<size_t>(nt) * kt_count + kt) * kInt4TileN * 4 + r * 4 + word];
      const uint8_t nib = static_cast<uint8_t>((v >> (4 * j)) & 0xfu);
      const size_t idx = static_cast<size_t>(n) * p.k + c;
      w.packed[idx >> 1] |= (idx & 1) ? static_cast<uint8_t>(nib << 4) : nib;
    }
    for (int g = 0; g < groups; ++g) {
      w.scales[static_cast<size_t>(n) * groups + g] =
          p.scales[static_cast<size_t>(g) * p.n_padded + n];
      if (!p.symmetric) {
        w.zeros[static_cast<size_t>(n) * groups + g] =
            p.zeros[static_cast<size_t>(g) * p.n_padded + n];
      }
    }
  }
  return w;
}

}  // namespace capplan::kernels
