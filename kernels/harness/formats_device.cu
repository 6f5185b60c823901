// Device side of the format self-test (formats_device.h).
#include <cuda_fp8.h>

#include "kernels/formats/bf16.h"
#include "kernels/formats/fp8.h"
#include "kernels/harness/cuda_timer.h"
#include "kernels/harness/device_buffer.h"
#include "kernels/harness/formats_device.h"

namespace capplan::kernels {

namespace {
__global__ void ConvertKernel(const float* in, int n, uint8_t* fp8, uint8_t* fp8_cuda,
                              uint16_t* bf16, float* decoded) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    fp8[i] = FloatToFp8E4m3(in[i]);
    fp8_cuda[i] = static_cast<uint8_t>(__nv_cvt_float_to_fp8(in[i], __NV_SATFINITE, __NV_E4M3));
    bf16[i] = FloatToBf16Bits(in[i]);
  }
  if (i < 256) decoded[i] = Fp8E4m3ToFloat(static_cast<uint8_t>(i));
}
}  // namespace

Result<DeviceFormatResults> RunFormatConversionsOnDevice(const std::vector<float>& in) {
  const int n = static_cast<int>(in.size());
  DeviceBuffer<> din, d8, d8c, d16, ddec;
  CAPPLAN_RETURN_IF_ERROR(din.Upload(in));
  CAPPLAN_RETURN_IF_ERROR(d8.Allocate(n));
  CAPPLAN_RETURN_IF_ERROR(d8c.Allocate(n));
  CAPPLAN_RETURN_IF_ERROR(d16.Allocate(2 * static_cast<size_t>(n)));
  CAPPLAN_RETURN_IF_ERROR(ddec.Allocate(256 * sizeof(float)));
  const int threads = 256, blocks = (std::max(n, 256) + threads - 1) / threads;
  ConvertKernel<<<blocks, threads>>>(din.as<float>(), n, d8.as<uint8_t>(), d8c.as<uint8_t>(),
                                     d16.as<uint16_t>(), ddec.as<float>());
  CAPPLAN_RETURN_IF_ERROR(CudaLastError("ConvertKernel"));
  DeviceFormatResults r;
  CAPPLAN_RETURN_IF_ERROR(d8.Download(&r.fp8));
  CAPPLAN_RETURN_IF_ERROR(d8c.Download(&r.fp8_cuda));
  CAPPLAN_RETURN_IF_ERROR(d16.Download(&r.bf16));
  CAPPLAN_RETURN_IF_ERROR(ddec.Download(&r.fp8_decoded));
  return r;
}

}  // namespace capplan::kernels
