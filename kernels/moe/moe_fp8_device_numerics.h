// The FP8-block MoE path with the device kernels' arithmetic, on the CPU.
// MoeForwardCpu (moe_cpu.h) is the exact reference: e4m3 codes times their
// scales in double. The device path (moe_cuda.h, grouped_gemm.cu) widens
// each code times its scale to BF16 before the tensor-core product and sums
// in FP32. Both requantize activations to e4m3 in 1x128 groups before each
// GEMM, and that is where they part: the widening moves gate/up by about a
// BF16 rounding, and requantizing SiLU(gate)*up (steps of 6-12%) turns a
// few percent of those into whole FP8 steps, which the down GEMM sums. On
// the shapes of tests/kernels/moe the two references differ by 1.7-2.0%
// (relative L2), the device by the same from the exact one. So a device
// check compares against this reference, tightly; the exact one bounds the
// design's own error (tests/kernels/moe/fp8_requant_spread_test.cc).
#ifndef CAPPLAN_KERNELS_MOE_MOE_FP8_DEVICE_NUMERICS_H_
#define CAPPLAN_KERNELS_MOE_MOE_FP8_DEVICE_NUMERICS_H_

#include <vector>

#include "common/status.h"
#include "kernels/moe/moe_cpu.h"

namespace capplan::kernels {

// One FP8-block expert's MLP, x [rows, H] -> out [rows, H] (BF16 values).
Status Fp8ExpertForwardDeviceNumerics(const MoeExpertWeights& e, const float* x, int rows,
                                      float* out);

// The whole FP8-block layer, routed as MoeForwardCpu routes it; y [tokens, H].
Status MoeForwardFp8DeviceNumerics(const MoeWeights& w, const RouterConfig& rc, const float* x,
                                   int tokens, float* y);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_MOE_MOE_FP8_DEVICE_NUMERICS_H_
