// Runs the host/device format conversions on the GPU (only with
// CAPPLAN_HAVE_CUDA) so tests can prove both sides give identical bits, and
// compares our FP8 encoder with CUDA's own __nv_cvt_float_to_fp8 (satfinite).
// It sits in the harness, not in kernels/formats, because it runs on the
// harness's DeviceBuffer: the formats stay below the harness.
#ifndef CAPPLAN_KERNELS_HARNESS_FORMATS_DEVICE_H_
#define CAPPLAN_KERNELS_HARNESS_FORMATS_DEVICE_H_

#ifdef CAPPLAN_HAVE_CUDA

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace capplan::kernels {

struct DeviceFormatResults {
  std::vector<uint8_t> fp8;        // FloatToFp8E4m3(in[i]) on the device
  std::vector<uint8_t> fp8_cuda;   // __nv_cvt_float_to_fp8(in[i], satfinite, E4M3)
  std::vector<uint16_t> bf16;      // FloatToBf16Bits(in[i]) on the device
  std::vector<float> fp8_decoded;  // Fp8E4m3ToFloat(i) for codes 0..255
};

Result<DeviceFormatResults> RunFormatConversionsOnDevice(const std::vector<float>& in);

}  // namespace capplan::kernels

#endif  // CAPPLAN_HAVE_CUDA
#endif  // CAPPLAN_KERNELS_HARNESS_FORMATS_DEVICE_H_
