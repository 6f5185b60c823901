// Every device GEMM against its CPU reference on random shapes, ragged ones
// included (M and N not multiples of the 32x64 tile, M = 1). Labelled gpu;
// skipped when no CUDA device is present.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/formats/bf16.h"
#include "kernels/gemm/device_weights.h"
#include "kernels/gemm/gemm_cpu.h"
#include "kernels/gemm/gemm_cuda.h"
#include "kernels/harness/check.h"
#include "kernels/harness/cuda_timer.h"
#include "kernels/harness/device_buffer.h"
#include "tests/kernels/gemm/test_util.h"

namespace capplan::kernels {
namespace {

#define SKIP_WITHOUT_DEVICE()                                    \
  do {                                                           \
    const std::string why = CudaDeviceUnavailableReason();       \
    if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why; \
  } while (0)

// The library is opened at run time, not linked: its soname and every entry
// point must resolve (the toolkit is installed wherever this test builds).
TEST(CublasLtLoad, OpensTheToolkitLibraryWithoutADevice) {
  const Status s = CublasLtGemm::Load();
  EXPECT_TRUE(s.ok()) << s.message();
}

std::vector<uint16_t> Bits(const std::vector<Bf16>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i].bits;
  return out;
}

std::vector<float> ToFloats(const std::vector<uint16_t>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = Bf16BitsToFloat(v[i]);
  return out;
}

// Tolerance: the device rounds each widened operand to BF16 (own kernel),
// accumulates in FP32 and rounds the output to BF16: ~2^-8 relative per
// element plus accumulation-order noise. atol scales with the output RMS.
void ExpectClose(const std::vector<float>& out, const std::vector<float>& ref, const char* what) {
  double rms = 0;
  for (float r : ref) rms += static_cast<double>(r) * r;
  rms = std::sqrt(rms / ref.size());
  const CheckResult c = Check(out, ref, 2e-2 * rms, 2e-2);
  EXPECT_TRUE(c.pass) << what << ": " << c.mismatches << " mismatches, " << c.unwritten
                      << " unwritten\n"
                      << c.report;
  EXPECT_LT(RelativeL2Error(out.data(), ref.data(), ref.size()), 1e-2) << what;
}

struct Case {
  int m, n, k;
};
const Case kCases[] = {{1, 64, 256}, {7, 200, 384}, {33, 128, 256}, {100, 72, 512}};

class OwnGemmGpuTest : public ::testing::TestWithParam<std::tuple<GemmWeightFormat, int, bool>> {};

TEST_P(OwnGemmGpuTest, MatchesCpuReference) {
  SKIP_WITHOUT_DEVICE();
  const auto [fmt, group, sym] = GetParam();
  unsigned seed = 100;
  for (const Case& c : kCases) {
    const auto wf = testing::RandomVector(static_cast<size_t>(c.n) * c.k, seed++, 0.05f);
    const auto xf = testing::RandomVector(static_cast<size_t>(c.m) * c.k, seed++);
    auto w = QuantizeGemmWeights(wf.data(), c.n, c.k, fmt, group, sym);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    auto a = PrepareGemmActivations(xf.data(), c.m, c.k, fmt);
    ASSERT_TRUE(a.ok());
    std::vector<float> ref(static_cast<size_t>(c.m) * c.n);
    ASSERT_TRUE(GemmCpuPrepared(*w, *a, ref.data()).ok());

    auto dw = UploadWeightSet({&*w});
    ASSERT_TRUE(dw.ok()) << dw.status().ToString();
    GroupedGemmArgs g;
    dw->Bind(&g);
    g.m = c.m;
    DeviceBuffer<uint16_t> x16, y;
    DeviceBuffer<uint8_t> x8;
    DeviceBuffer<float> xs;
    if (fmt == GemmWeightFormat::kFp8Block128) {
      ASSERT_TRUE(x8.Upload(a->fp8.codes).ok());
      ASSERT_TRUE(xs.Upload(a->fp8.scales).ok());
      g.x_fp8 = x8.get();
      g.x_scales = xs.get();
    } else {
      ASSERT_TRUE(x16.Upload(Bits(a->bf16)).ok());
      g.x_bf16 = x16.get();
    }
    ASSERT_TRUE(y.Allocate(ref.size()).ok());
    ASSERT_TRUE(y.Poison().ok());
    g.y = y.get();
    ASSERT_TRUE(LaunchGroupedGemm(g).ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<uint16_t> out;
    ASSERT_TRUE(y.Download(&out).ok());
    ExpectClose(ToFloats(out), ref, GemmWeightFormatName(fmt));

    // Split-K must give the same answer (deterministic reduction).
    if (c.k >= 256) {
      DeviceBuffer<float> ws;
      g.split_k = 2;
      ASSERT_TRUE(ws.Allocate(2 * ref.size()).ok());
      g.workspace = ws.get();
      ASSERT_TRUE(y.Poison().ok());
      ASSERT_TRUE(LaunchGroupedGemm(g).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      ASSERT_TRUE(y.Download(&out).ok());
      ExpectClose(ToFloats(out), ref, "split-k");
    }
  }
}

std::string ParamName(
    const ::testing::TestParamInfo<std::tuple<GemmWeightFormat, int, bool>>& info) {
  return std::string(GemmWeightFormatName(std::get<0>(info.param))) + "_g" +
         std::to_string(std::get<1>(info.param)) + (std::get<2>(info.param) ? "_sym" : "_asym");
}

INSTANTIATE_TEST_SUITE_P(Formats, OwnGemmGpuTest,
                         ::testing::Values(std::make_tuple(GemmWeightFormat::kBf16, 128, true),
                                           std::make_tuple(GemmWeightFormat::kFp8Block128, 128,
                                                           true),
                                           std::make_tuple(GemmWeightFormat::kInt4, 32, true),
                                           std::make_tuple(GemmWeightFormat::kInt4, 128, true),
                                           std::make_tuple(GemmWeightFormat::kInt4, 32, false),
                                           std::make_tuple(GemmWeightFormat::kInt4, 128, false)),
                         ParamName);

TEST(CublasLtGemmGpuTest, Bf16AndFp8PerTensorMatchCpu) {
  SKIP_WITHOUT_DEVICE();
  auto lt = CublasLtGemm::Create();
  ASSERT_TRUE(lt.ok()) << lt.status().ToString();
  unsigned seed = 500;
  for (const Case& c : kCases) {
    const auto wf = testing::RandomVector(static_cast<size_t>(c.n) * c.k, seed++, 0.05f);
    const auto xf = testing::RandomVector(static_cast<size_t>(c.m) * c.k, seed++);
    for (GemmWeightFormat fmt : {GemmWeightFormat::kBf16, GemmWeightFormat::kFp8PerTensor}) {
      auto w = QuantizeGemmWeights(wf.data(), c.n, c.k, fmt);
      auto a = PrepareGemmActivations(xf.data(), c.m, c.k, fmt);
      ASSERT_TRUE(w.ok() && a.ok());
      std::vector<float> ref(static_cast<size_t>(c.m) * c.n);
      ASSERT_TRUE(GemmCpuPrepared(*w, *a, ref.data()).ok());
      DeviceBuffer<uint16_t> y;
      ASSERT_TRUE(y.Allocate(ref.size()).ok());
      ASSERT_TRUE(y.Poison().ok());
      Status st;
      DeviceBuffer<uint16_t> w16, x16;
      DeviceBuffer<uint8_t> w8, x8;
      DeviceBuffer<float> ws, xs;
      if (fmt == GemmWeightFormat::kBf16) {
        ASSERT_TRUE(w16.Upload(Bits(w->bf16)).ok());
        ASSERT_TRUE(x16.Upload(Bits(a->bf16)).ok());
        st = (*lt)->Bf16(x16.get(), w16.get(), y.get(), c.m, c.n, c.k);
      } else {
        ASSERT_TRUE(w8.Upload(w->fp8.codes).ok());
        ASSERT_TRUE(ws.Upload(w->fp8.scales).ok());
        ASSERT_TRUE(x8.Upload(a->fp8.codes).ok());
        ASSERT_TRUE(xs.Upload(a->fp8.scales).ok());
        st = (*lt)->Fp8PerTensor(x8.get(), xs.get(), w8.get(), ws.get(), y.get(), c.m, c.n, c.k);
      }
      ASSERT_TRUE(st.ok()) << st.ToString();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<uint16_t> out;
      ASSERT_TRUE(y.Download(&out).ok());
      ExpectClose(ToFloats(out), ref, GemmWeightFormatName(fmt));
    }
  }
}

TEST(GroupedGemmGpuTest, RejectsBadArguments) {
  SKIP_WITHOUT_DEVICE();
  GroupedGemmArgs g;
  g.m = 4;
  g.n = 64;
  g.k = 48;  // not a multiple of 32
  EXPECT_FALSE(LaunchGroupedGemm(g).ok());
  g.k = 64;
  g.num_groups = 3;  // groups without offsets
  EXPECT_FALSE(LaunchGroupedGemm(g).ok());
}

}  // namespace
}  // namespace capplan::kernels
