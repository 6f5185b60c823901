// The small per-token kernels around attention, with CPU references:
//   * RMSNorm with the residual add fused in (SGLang/vLLM "fused_add_rmsnorm"
//     pattern): h = x + residual; residual_out = h; y = h / rms(h) * w.
//     Fused because both passes are HBM-bound: one read of x and residual
//     instead of two round trips. Bytes: 2 reads + 2 writes of [n, d] BF16 +
//     w; FLOPs ~4 n d. Roofline: HBM (the measured device copy).
//   * SiLU-and-mul: y = silu(gate) * up from [n, 2d] (gate first), the MLP
//     activation. Bytes: read 2nd, write nd, BF16. Roofline: HBM.
//   * RoPE, rotate-half ("NeoX") form, in place on the rope_dim dims starting
//     at rope_offset of every head of q and k (MLA: the last 64 of 576).
//     Bytes: read + write of the rotated part. Roofline: HBM.
// All inputs/outputs BF16, math in float (double in the references).
#ifndef CAPPLAN_KERNELS_ATTENTION_ELEMENTWISE_H_
#define CAPPLAN_KERNELS_ATTENTION_ELEMENTWISE_H_

#include <cstdint>

#include "kernels/formats/bf16.h"

namespace capplan::kernels {

// x, residual [n, d]; writes y [n, d] and residual (in place) [n, d].
void FusedAddRmsNormCpu(int n, int d, float eps, const Bf16* x, Bf16* residual, const Bf16* w,
                        float* y);
// gate_up [n, 2d] -> y [n, d].
void SiluMulCpu(int n, int d, const Bf16* gate_up, float* y);
// x [n, heads, head_dim], positions [n]; rotates dims
// [rope_offset, rope_offset + rope_dim) in place (pairs i and i + rope_dim/2)
// with inv_freq_i = theta^(-2i / rope_dim). Output as float [n, heads, head_dim].
void RopeCpu(int n, int heads, int head_dim, int rope_offset, int rope_dim, float theta,
             const int32_t* positions, const Bf16* x, float* y);

// The absolute error a device RoPE may show against RopeCpu (double
// throughout) besides BF16 rounding: the device forms its angle as one FP32
// product pos * inv_freq (as production engines' cos/sin caches do), which
// is off by up to half an ulp of the angle, pos * 2^-24 radians for
// inv_freq <= 1; the rotated value moves by that times |x|.
inline double RopeAngleTolerance(int32_t max_position, double max_abs_x) {
  return 2.0 * static_cast<double>(max_position) * 0x1p-24 * max_abs_x;
}

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_ATTENTION_ELEMENTWISE_H_
