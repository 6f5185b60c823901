// Host and device conversions must agree bit for bit, and our FP8 encoder
// must agree with CUDA's satfinite conversion (label: gpu).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "kernels/formats/bf16.h"
#include "kernels/formats/fp8.h"
#include "kernels/harness/formats_device.h"
#include "tests/kernels/harness/gpu_test_util.h"

namespace capplan::kernels {
namespace {

TEST(FormatsGpu, DeviceMatchesHostAndCudaSatfinite) {
  CAPPLAN_REQUIRE_CUDA_DEVICE();
  std::vector<float> in;
  for (int c = 0; c < 256; ++c) in.push_back(Fp8E4m3ToFloat(static_cast<uint8_t>(c)));
  for (int c = 0; c < 0x7e; ++c) {  // midpoints: the tie cases
    in.push_back(0.5f * (Fp8E4m3ToFloat(c) + Fp8E4m3ToFloat(c + 1)));
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {448.0f, 464.0f, 500.0f, 1e9f, inf, -inf, 1e-30f, -0.0f}) in.push_back(x);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> e(-12.0f, 10.0f);
  for (int i = 0; i < 20000; ++i) in.push_back((i & 1 ? -1.0f : 1.0f) * std::exp2(e(rng)));
  auto r = RunFormatConversionsOnDevice(in);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (size_t i = 0; i < in.size(); ++i) {
    if (std::isnan(in[i])) continue;
    ASSERT_EQ(r->fp8[i], FloatToFp8E4m3(in[i])) << in[i];
    ASSERT_EQ(r->fp8[i], r->fp8_cuda[i]) << "vs __nv_cvt_float_to_fp8 at " << in[i];
    ASSERT_EQ(r->bf16[i], FloatToBf16Bits(in[i])) << in[i];
  }
  for (int c = 0; c < 256; ++c) {
    const float h = Fp8E4m3ToFloat(static_cast<uint8_t>(c));
    if (std::isnan(h)) {
      EXPECT_TRUE(std::isnan(r->fp8_decoded[c]));
    } else {
      EXPECT_EQ(r->fp8_decoded[c], h) << c;
    }
  }
}

}  // namespace
}  // namespace capplan::kernels
