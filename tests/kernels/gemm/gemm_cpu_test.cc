// CPU GEMM references: each quantized path against the float64 GEMM on the
// unquantized operands, within tolerances derived from the formats' rounding
// (documented per test), and internal consistency.
#include "kernels/gemm/gemm_cpu.h"

#include <gtest/gtest.h>

#include "tests/kernels/gemm/test_util.h"

namespace capplan::kernels {
namespace {

using testing::RandomVector;
using testing::RelErr;

struct Problem {
  int m, n, k;
  std::vector<float> w, x, exact;
};

Problem MakeProblem(int m, int n, int k, unsigned seed) {
  Problem p{m,
            n,
            k,
            RandomVector(static_cast<size_t>(n) * k, seed, 0.05f),
            RandomVector(static_cast<size_t>(m) * k, seed + 1),
            {}};
  p.exact.resize(static_cast<size_t>(m) * n);
  GemmCpuExact(p.w.data(), p.x.data(), m, n, k, p.exact.data());
  return p;
}

double QuantizedError(const Problem& p, GemmWeightFormat f, int group = 128, bool sym = true) {
  auto w = QuantizeGemmWeights(p.w.data(), p.n, p.k, f, group, sym);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  std::vector<float> y(static_cast<size_t>(p.m) * p.n);
  EXPECT_TRUE(GemmCpu(*w, p.x.data(), p.m, y.data()).ok());
  return RelErr(y, p.exact);
}

// Tolerances: BF16 rounds each operand with relative error <= 2^-9, so the
// norm error of a long random dot product is ~2^-9 (bound 4e-3). e4m3 has 3
// mantissa bits (<= 2^-4 per element, ~2^-4/sqrt(3) rms per operand: ~0.05
// for both operands); INT4 with amax/7 scales over a Gaussian group leaves
// ~0.1 rms relative error per weight (bound 0.2).
TEST(GemmCpuTest, QuantizedPathsWithinDocumentedTolerance) {
  const Problem p = MakeProblem(37, 96, 512, 7);
  const double bf16 = QuantizedError(p, GemmWeightFormat::kBf16);
  const double fp8 = QuantizedError(p, GemmWeightFormat::kFp8PerTensor);
  const double fp8b = QuantizedError(p, GemmWeightFormat::kFp8Block128);
  const double int4_128 = QuantizedError(p, GemmWeightFormat::kInt4, 128, true);
  const double int4_32 = QuantizedError(p, GemmWeightFormat::kInt4, 32, true);
  const double int4_asym = QuantizedError(p, GemmWeightFormat::kInt4, 128, false);
  EXPECT_LT(bf16, 4e-3);
  EXPECT_GT(bf16, 1e-5);  // rounding really happened
  EXPECT_LT(fp8, 0.08);
  EXPECT_LT(fp8b, 0.08);
  EXPECT_GT(fp8b, bf16);
  EXPECT_LT(int4_128, 0.2);
  EXPECT_LT(int4_asym, 0.2);
  EXPECT_LT(int4_32, int4_128);  // smaller groups track the local range better
  EXPECT_GT(int4_128, fp8b);     // 4 bits lose more than 8
}

// GemmCpuPrepared must be exactly the float64 GEMM of the dequantized
// operands: no hidden extra rounding.
TEST(GemmCpuTest, PreparedEqualsGemmOfDequantizedOperands) {
  const int m = 5, n = 70, k = 256;
  const auto w = RandomVector(static_cast<size_t>(n) * k, 3, 0.1f);
  const auto x = RandomVector(static_cast<size_t>(m) * k, 4);
  for (GemmWeightFormat f : {GemmWeightFormat::kBf16, GemmWeightFormat::kFp8PerTensor,
                             GemmWeightFormat::kFp8Block128, GemmWeightFormat::kInt4}) {
    auto q = QuantizeGemmWeights(w.data(), n, k, f, 32, false);
    ASSERT_TRUE(q.ok());
    auto a = PrepareGemmActivations(x.data(), m, k, f);
    ASSERT_TRUE(a.ok());
    std::vector<float> xd(static_cast<size_t>(m) * k);
    if (f == GemmWeightFormat::kBf16 || f == GemmWeightFormat::kInt4) {
      for (size_t i = 0; i < xd.size(); ++i) xd[i] = ToFloat(a->bf16[i]);
    } else {
      DequantizeFp8(a->fp8, xd.data());
    }
    const std::vector<float> wd = DequantizeGemmWeights(*q);
    std::vector<float> y(static_cast<size_t>(m) * n), ref(y.size());
    ASSERT_TRUE(GemmCpuPrepared(*q, *a, y.data()).ok());
    GemmCpuExact(wd.data(), xd.data(), m, n, k, ref.data());
    EXPECT_LT(RelErr(y, ref), 1e-6) << GemmWeightFormatName(f);
  }
}

TEST(GemmCpuTest, RaggedShapesAndSingleRow) {
  for (int m : {1, 3, 17}) {
    const Problem p = MakeProblem(m, 65, 384, 11 + m);
    EXPECT_LT(QuantizedError(p, GemmWeightFormat::kFp8Block128), 0.08) << m;
    EXPECT_LT(QuantizedError(p, GemmWeightFormat::kInt4, 32, false), 0.2) << m;
  }
}

TEST(GemmCpuTest, RejectsMismatchedOperands) {
  const auto w = RandomVector(64 * 128, 1);
  auto q = QuantizeGemmWeights(w.data(), 64, 128, GemmWeightFormat::kBf16);
  ASSERT_TRUE(q.ok());
  const auto x = RandomVector(2 * 64, 2);
  auto a = PrepareGemmActivations(x.data(), 2, 64, GemmWeightFormat::kBf16);
  ASSERT_TRUE(a.ok());
  std::vector<float> y(2 * 64);
  EXPECT_EQ(GemmCpuPrepared(*q, *a, y.data()).code(), StatusCode::kInvalidConfig);
  auto a2 = PrepareGemmActivations(x.data(), 1, 128, GemmWeightFormat::kFp8Block128);
  ASSERT_TRUE(a2.ok());
  EXPECT_EQ(GemmCpuPrepared(*q, *a2, y.data()).code(), StatusCode::kInvalidConfig);
  // INT4 needs K to be a multiple of the group.
  auto bad = QuantizeGemmWeights(w.data(), 64, 128, GemmWeightFormat::kInt4, 96);
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace capplan::kernels
