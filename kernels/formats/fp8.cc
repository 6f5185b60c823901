// CPU side of the FP8 scale granularities (the conversions themselves are in
// the header so device code shares them).
#include "kernels/formats/fp8.h"

#include <algorithm>
#include <cmath>

namespace capplan::kernels {

namespace {
int Resolve(int block, int extent) { return block <= 0 ? extent : std::min(block, extent); }
}  // namespace

float Fp8Tensor::ScaleAt(int r, int c) const {
  const int br = Resolve(blocking.block_rows, rows);
  const int bc = Resolve(blocking.block_cols, cols);
  return scales[static_cast<size_t>(r / br) * scale_cols + c / bc];
}

Result<Fp8Tensor> QuantizeFp8(const float* x, int rows, int cols, Fp8Blocking blocking) {
  if (rows <= 0 || cols <= 0) {
    return Status::Invalid("QuantizeFp8: shape must be positive, got " + std::to_string(rows) +
                           "x" + std::to_string(cols));
  }
  Fp8Tensor t;
  t.rows = rows;
  t.cols = cols;
  t.blocking = blocking;
  const int br = Resolve(blocking.block_rows, rows);
  const int bc = Resolve(blocking.block_cols, cols);
  t.scale_rows = (rows + br - 1) / br;
  t.scale_cols = (cols + bc - 1) / bc;
  t.scales.assign(static_cast<size_t>(t.scale_rows) * t.scale_cols, 0.0f);
  t.codes.resize(static_cast<size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const float v = x[static_cast<size_t>(r) * cols + c];
      if (!std::isfinite(v)) {
        return Status::Invalid("QuantizeFp8: non-finite input at [" + std::to_string(r) + "," +
                               std::to_string(c) + "]");
      }
      float& amax = t.scales[static_cast<size_t>(r / br) * t.scale_cols + c / bc];
      amax = std::max(amax, std::fabs(v));
    }
  }
  for (float& s : t.scales) s = Fp8ScaleForAmax(s);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r) * cols + c;
      t.codes[i] = FloatToFp8E4m3(x[i] / t.ScaleAt(r, c));
    }
  }
  return t;
}

void DequantizeFp8(const Fp8Tensor& t, float* out) {
  for (int r = 0; r < t.rows; ++r) {
    for (int c = 0; c < t.cols; ++c) {
      const size_t i = static_cast<size_t>(r) * t.cols + c;
      out[i] = Fp8E4m3ToFloat(t.codes[i]) * t.ScaleAt(r, c);
    }
  }
}

std::string Fp8BlockingName(Fp8Blocking b) {
  if (b.block_rows <= 0 && b.block_cols <= 0) return "per_tensor";
  if (b.block_rows == 1 && b.block_cols <= 0) return "per_token";
  return "block_" + std::to_string(b.block_rows) + "x" + std::to_string(b.block_cols);
}

}  // namespace capplan::kernels
