// The INT4 weight layout the W4A16 kernel (w4a16_gemm.cu) wants, made once
// offline from kernels/formats' row-major Int4Weights. GEMM-specific, hence
// here and not in kernels/formats.
//
// Why a layout at all: the kernel computes a 64(N) x 32(K) weight tile per
// step. In row-major packing one tile row is 16 bytes and consecutive rows
// are K/2 bytes apart, so a warp's loads touch 32 different cache lines. Here
// each tile is 64 rows x 16 bytes = 1 KiB contiguous, so 64 threads load it
// with one coalesced 16-byte access each (Marlin/Machete prepack for the
// same reason: IST-DASLab/marlin README.md, vllm-project/vllm
// csrc/quantization/machete/Readme.md; theirs also match MMA fragment order).
//
//   qweight (uint32): tile (nt, kt) starts at word ((nt * KT + kt) * 64) * 4;
//     row r of the tile owns words [r*4, r*4+4); word w holds
//     k = kt*32 + w*8 + j in bits [4j, 4j+4), j = 0..7.
//   scales (BF16) and zeros (uint8, asymmetric only): [K/group][n_padded],
//     so the 64 scales of a tile row-group are one 128-byte line.
// N is padded to a multiple of 64 with zero-scale rows (they dequantize to 0
// and are never written out). K must be a multiple of 32 (true for groups
// 32 and 128).
#ifndef CAPPLAN_KERNELS_GEMM_INT4_PREPACK_H_
#define CAPPLAN_KERNELS_GEMM_INT4_PREPACK_H_

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "kernels/formats/int4.h"

namespace capplan::kernels {

inline constexpr int kInt4TileN = 64;  // rows per weight tile (kernel BN)
inline constexpr int kInt4TileK = 32;  // K per weight tile (kernel BK, smallest group)

struct Int4Prepacked {
  int n = 0;
  int k = 0;
  int n_padded = 0;
  int group = 0;
  bool symmetric = true;
  std::vector<uint32_t> qweight;  // n_padded * k / 8 words
  std::vector<Bf16> scales;       // (k / group) * n_padded
  std::vector<uint8_t> zeros;     // (k / group) * n_padded, asymmetric only
  // Bytes the kernel streams: nibbles + scales (+ zeros).
  double Bytes() const;
};

Result<Int4Prepacked> PrepackInt4(const Int4Weights& w);
// Inverse of PrepackInt4 (drops the padding); for tests and tools.
Int4Weights UnpackInt4(const Int4Prepacked& p);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_GEMM_INT4_PREPACK_H_
