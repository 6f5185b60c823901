// CPU references against float64 ground truth, FP8 vs BF16 KV, page-table
// invariance, and integrity verification.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kernels/attention/attention.h"
#include "kernels/attention/paged_kv.h"
#include "kernels/formats/fp8.h"
#include "kernels/harness/check.h"
#include "tests/kernels/attention/attention_test_util.h"

namespace capplan::kernels {
namespace {

using testing::DenseAttention;
using testing::FillCache;
using testing::Filled;
using testing::RandomBf16;

PagedKvLayout Gqa(int kv_heads, int page, KvDtype dt) {
  PagedKvLayout l;
  l.page_size = page;
  l.kv_heads = kv_heads;
  l.k_dim = 128;
  l.v_dim = 128;
  l.dtype = dt;
  return l;
}

AttentionProblem ProblemFor(const Filled& f, int rows, int q_heads) {
  const PagedKvLayout& l = f.cache.layout;
  AttentionProblem p;
  p.rows = rows;
  p.q_heads = q_heads;
  p.kv_heads = l.kv_heads;
  p.k_dim = l.k_dim;
  p.v_dim = l.v_dim ? l.v_dim : kMlaLatentDim;
  p.v_from_k = l.v_dim == 0;
  p.sm_scale = 1.0f / std::sqrt(static_cast<float>(l.k_dim));
  p.k_scale = f.cache.k_scale;
  p.v_scale = f.cache.v_scale;
  p.page_size = l.page_size;
  p.max_pages = f.pt.max_pages;
  p.kv_dtype = l.dtype;
  return p;
}

// Ground truth straight from the BF16 sources (no paging involved).
std::vector<double> Truth(const Filled& f, const AttentionProblem& p, const std::vector<Bf16>& q,
                          int row, int seq, int h, const std::vector<int>& positions) {
  const PagedKvLayout& l = f.cache.layout;
  const int kvh = h / p.group();
  std::vector<double> qd(p.k_dim);
  for (int d = 0; d < p.k_dim; ++d) {
    qd[d] = ToFloat(q[(static_cast<size_t>(row) * p.q_heads + h) * p.k_dim + d]);
  }
  std::vector<std::vector<double>> k, v;
  for (int t : positions) {
    std::vector<double> kt(p.k_dim), vt(p.v_dim);
    for (int d = 0; d < p.k_dim; ++d) {
      kt[d] = ToFloat(f.k_src[seq][(static_cast<size_t>(t) * l.kv_heads + kvh) * l.k_dim + d]);
    }
    for (int d = 0; d < p.v_dim; ++d) {
      vt[d] =
          p.v_from_k
              ? kt[d]
              : ToFloat(f.v_src[seq][(static_cast<size_t>(t) * l.kv_heads + kvh) * l.v_dim + d]);
    }
    k.push_back(kt);
    v.push_back(vt);
  }
  return DenseAttention(qd, k, v, p.sm_scale);
}

TEST(PagedKvCpu, AppendStoresBf16ExactlyAndStampsTags) {
  const Filled f = FillCache({5, 33, 16}, Gqa(2, 16, KvDtype::kBf16), 1.0f, 1.0f, 3);
  const PagedKvLayout& l = f.cache.layout;
  for (int b = 0; b < 3; ++b) {
    for (int t = 0; t < f.pt.seq_lens[b]; ++t) {
      const int page = f.pt.Page(b, t / l.page_size);
      for (int h = 0; h < l.kv_heads; ++h) {
        for (int d = 0; d < l.k_dim; d += 17) {
          ASSERT_EQ(f.cache.KAt(page, t % l.page_size, h, d),
                    ToFloat(f.k_src[b][(static_cast<size_t>(t) * l.kv_heads + h) * l.k_dim + d]));
        }
      }
      const KvPageTag tag = f.cache.tags[page];
      EXPECT_EQ(tag.request, f.pt.request_ids[b]);
      EXPECT_EQ(tag.logical_page, t / l.page_size);
    }
  }
  // Unused slot of a partially filled page is still poison (NaN).
  EXPECT_TRUE(std::isnan(f.cache.KAt(f.pt.Page(0, 0), 7, 0, 0)));
}

TEST(PagedKvCpu, AppendQuantisesFp8WithScale) {
  const float ks = 4.0f / kFp8E4m3Max, vs = 3.0f / kFp8E4m3Max;  // |x| <= ~4 sigma
  const Filled f = FillCache({40}, Gqa(1, 16, KvDtype::kFp8), ks, vs, 5);
  for (int t = 0; t < 40; ++t) {
    const int page = f.pt.Page(0, t / 16);
    for (int d = 0; d < 128; ++d) {
      const float src = ToFloat(f.k_src[0][static_cast<size_t>(t) * 128 + d]);
      const float got = f.cache.KAt(page, t % 16, 0, d);
      const float bound =
          std::min(std::fabs(src), 4.0f) * kFp8E4m3RelErr + ks * std::ldexp(1.0f, -10);
      if (std::fabs(src) <= 4.0f)
        ASSERT_LE(std::fabs(got - src), bound + 1e-7f) << t << "," << d;
      else
        ASSERT_NEAR(std::fabs(got), 4.0f, 1e-6f);  // saturated at 448 * scale
    }
  }
}

TEST(PagedKvCpu, AppendRejectsPositionsOutsideThePageTable) {
  Filled f = FillCache({16}, Gqa(1, 16, KvDtype::kBf16), 1, 1, 9);
  const auto k = RandomBf16(128, 1), v = RandomBf16(128, 2);
  const int32_t row = 0, pos = 16;  // page 1 does not exist for this row
  AppendBatch ab{1, k.data(), v.data(), &row, &pos};
  EXPECT_EQ(AppendKvCpu(ab, f.pt, &f.cache).code(), StatusCode::kInvalidConfig);
}

TEST(IntegrityCpu, CleanTableHasNoMismatches) {
  const Filled f = FillCache({17, 64, 3}, Gqa(1, 16, KvDtype::kBf16), 1, 1, 11);
  const IntegrityReport r = VerifyKvIntegrityCpu(f.pt, f.cache.tags, 16, 8);
  EXPECT_EQ(r.count, 0);
}

TEST(IntegrityCpu, DetectsSwappedStaleAndPoisonEntries) {
  const Filled f = FillCache({40, 40, 20}, Gqa(1, 16, KvDtype::kBf16), 1, 1, 13);
  PageTable bad = f.pt;
  // A mapping bug: two rows' first pages swapped -> both mismatch.
  std::swap(bad.pages[0 * bad.max_pages + 0], bad.pages[1 * bad.max_pages + 0]);
  // A stale entry: epoch from before the page was reused.
  bad.epochs[1 * bad.max_pages + 2] += 1;
  // A padded slot pointing at the poison page inside the live range.
  bad.pages[2 * bad.max_pages + 1] = kKvPoisonPage;
  IntegrityReport r = VerifyKvIntegrityCpu(bad, f.cache.tags, 16, 8);
  ASSERT_EQ(r.count, 4);
  EXPECT_EQ(r.first[0].row, 0);
  EXPECT_EQ(r.first[0].logical_page, 0);
  EXPECT_EQ(r.first[0].found.request, f.pt.request_ids[1]);
  EXPECT_EQ(r.first[3].physical_page, kKvPoisonPage);
  // The cap bounds the buffer, not the count.
  r = VerifyKvIntegrityCpu(bad, f.cache.tags, 16, 2);
  EXPECT_EQ(r.count, 4);
  EXPECT_EQ(r.first.size(), 2u);
}

class AttentionCpuVsTruth : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(AttentionCpuVsTruth, GqaDecodeMatchesDenseFloat64) {
  const auto [q_heads, kv_heads, page] = GetParam();
  const std::vector<int32_t> lens = {1, 37, 100, 64};
  const Filled f = FillCache(lens, Gqa(kv_heads, page, KvDtype::kBf16), 1, 1, 17 + page);
  AttentionProblem p = ProblemFor(f, 4, q_heads);
  const auto q = RandomBf16(static_cast<size_t>(p.rows) * q_heads * 128, 19);
  std::vector<int32_t> seq = {0, 1, 2, 3};
  AttentionRows r{seq.data(), lens.data(), nullptr, f.pt.pages.data()};
  std::vector<float> out(static_cast<size_t>(p.rows) * q_heads * 128);
  ASSERT_TRUE(PagedAttentionCpu(p, r, q.data(), f.cache, out.data()).ok());
  for (int row = 0; row < p.rows; ++row) {
    std::vector<int> pos(lens[row]);
    for (int i = 0; i < lens[row]; ++i) pos[i] = i;
    for (int h = 0; h < q_heads; ++h) {
      const auto t = Truth(f, p, q, row, row, h, pos);
      for (int d = 0; d < 128; ++d) {
        ASSERT_NEAR(out[(static_cast<size_t>(row) * q_heads + h) * 128 + d], t[d], 1e-5)
            << row << "," << h << "," << d;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionCpuVsTruth,
                         ::testing::Values(std::make_tuple(8, 1, 16), std::make_tuple(8, 2, 64),
                                           std::make_tuple(4, 4, 16)));

TEST(AttentionCpu, PhysicalPagePermutationDoesNotChangeOutput) {
  // Same data behind two different random physical assignments: outputs
  // must be bit-identical (the page-mapping oracle: any difference is a
  // page-table bug).
  const std::vector<int32_t> lens = {50, 90};
  const Filled a = FillCache(lens, Gqa(1, 16, KvDtype::kBf16), 1, 1, 23);
  Filled b = a;
  b.pt = MakeRandomPageTable(lens, 16, 999, nullptr);
  b.cache = HostPagedKv::Make(a.cache.layout, 1, 1);
  for (int r = 0; r < 2; ++r) {
    std::vector<int32_t> rows(lens[r], r), pos(lens[r]);
    for (int i = 0; i < lens[r]; ++i) pos[i] = i;
    AppendBatch ab{lens[r], a.k_src[r].data(), a.v_src[r].data(), rows.data(), pos.data()};
    ASSERT_TRUE(AppendKvCpu(ab, b.pt, &b.cache).ok());
  }
  ASSERT_NE(a.pt.pages, b.pt.pages);
  AttentionProblem p = ProblemFor(a, 2, 8);
  const auto q = RandomBf16(2 * 8 * 128, 29);
  std::vector<int32_t> seq = {0, 1};
  std::vector<float> oa(2 * 8 * 128), ob(oa.size());
  AttentionRows ra{seq.data(), lens.data(), nullptr, a.pt.pages.data()};
  AttentionRows rb{seq.data(), lens.data(), nullptr, b.pt.pages.data()};
  ASSERT_TRUE(PagedAttentionCpu(p, ra, q.data(), a.cache, oa.data()).ok());
  ASSERT_TRUE(PagedAttentionCpu(p, rb, q.data(), b.cache, ob.data()).ok());
  EXPECT_EQ(oa, ob);
}

// FP8 KV against BF16 KV. What we assert and why: E4M3 keeps 3 mantissa
// bits, so each stored K/V element carries a relative rounding error of at
// most 2^-4 and an RMS of about 2^-4/sqrt(3) ~ 3.6% (uniform rounding). The
// output is a softmax-weighted average of many V rows, so independent
// errors average down, while score errors perturb the weights by
// exp(+-ds). We assert the relative L2 error of the whole output stays
// under 2^-4 = 6.25% (the per-element worst case), and that no element
// moves by more than 2^-4 * max|v| * 4 (score-error headroom).
TEST(AttentionCpu, Fp8KvWithinDocumentedToleranceOfBf16) {
  const std::vector<int32_t> lens = {256, 700};
  const float amax = 4.5f;  // ~4.5 sigma of N(0,1): calibrated per-tensor scale
  const Filled bf = FillCache(lens, Gqa(1, 64, KvDtype::kBf16), 1, 1, 31);
  Filled f8 =
      FillCache(lens, Gqa(1, 64, KvDtype::kFp8), amax / kFp8E4m3Max, amax / kFp8E4m3Max, 31);
  AttentionProblem pb = ProblemFor(bf, 2, 8), p8 = ProblemFor(f8, 2, 8);
  const auto q = RandomBf16(2 * 8 * 128, 37);
  std::vector<int32_t> seq = {0, 1};
  std::vector<float> ob(2 * 8 * 128), o8(ob.size());
  ASSERT_TRUE(PagedAttentionCpu(pb, {seq.data(), lens.data(), nullptr, bf.pt.pages.data()},
                                q.data(), bf.cache, ob.data())
                  .ok());
  ASSERT_TRUE(PagedAttentionCpu(p8, {seq.data(), lens.data(), nullptr, f8.pt.pages.data()},
                                q.data(), f8.cache, o8.data())
                  .ok());
  const double rel = RelativeL2Error(o8.data(), ob.data(), ob.size());
  EXPECT_LT(rel, kFp8E4m3RelErr) << "relative L2 error " << rel;
  EXPECT_GT(rel, 0.0);  // FP8 really was used
  for (size_t i = 0; i < ob.size(); ++i) {
    ASSERT_LE(std::fabs(o8[i] - ob[i]), kFp8E4m3RelErr * amax * 4) << i;
  }
}

PagedKvLayout Mla(int page, KvDtype dt) {
  PagedKvLayout l;
  l.page_size = page;
  l.kv_heads = 1;
  l.k_dim = kMlaLatentDim + kMlaRopeDim;
  l.v_dim = 0;
  l.dtype = dt;
  return l;
}

TEST(AttentionCpu, MlaAbsorbedAndDsaTopkMatchDenseTruth) {
  const std::vector<int32_t> lens = {70, 130};
  const Filled f = FillCache(lens, Mla(64, KvDtype::kBf16), 1, 1, 41);
  AttentionProblem p = ProblemFor(f, 2, 16);
  p.sm_scale = 1.0f / std::sqrt(192.0f);  // qk_nope + qk_rope (kimi-k2.6 card)
  const auto q = RandomBf16(2 * 16 * 576, 43, 0.5f);
  std::vector<int32_t> seq = {0, 1};
  std::vector<float> out(2 * 16 * 512);
  ASSERT_TRUE(PagedAttentionCpu(p, {seq.data(), lens.data(), nullptr, f.pt.pages.data()}, q.data(),
                                f.cache, out.data())
                  .ok());
  std::vector<int> all(lens[1]);
  for (int i = 0; i < lens[1]; ++i) all[i] = i;
  const auto t = Truth(f, p, q, 1, 1, 5, all);
  for (int d = 0; d < 512; ++d) ASSERT_NEAR(out[(16 + 5) * 512 + d], t[d], 1e-5) << d;

  // DSA: each row sees only its top-k list (with -1 padding).
  p.topk = 8;
  std::vector<int32_t> idx = {3, 60,  1,  69, -1, 10,  11, -1,  // row 0 (6 real)
                              0, 129, 64, 65, 7,  100, 5,  128};
  ASSERT_TRUE(PagedAttentionCpu(p, {seq.data(), lens.data(), idx.data(), f.pt.pages.data()},
                                q.data(), f.cache, out.data())
                  .ok());
  const auto t0 = Truth(f, p, q, 0, 0, 15, {3, 60, 1, 69, 10, 11});
  for (int d = 0; d < 512; ++d) ASSERT_NEAR(out[15 * 512 + d], t0[d], 1e-5) << d;
}

TEST(AttentionCpu, PrefillChunkIsCausalOverThePagedPrefix) {
  const std::vector<int32_t> lens = {90};
  const Filled f = FillCache(lens, Gqa(2, 16, KvDtype::kBf16), 1, 1, 47);
  std::vector<int32_t> rseq, rctx;
  MakePrefillRows(0, 60, 30, &rseq, &rctx);  // chunk of 30 after a 60-token prefix
  AttentionProblem p = ProblemFor(f, 30, 8);
  const auto q = RandomBf16(30 * 8 * 128, 53);
  std::vector<float> out(30 * 8 * 128);
  ASSERT_TRUE(PagedAttentionCpu(p, {rseq.data(), rctx.data(), nullptr, f.pt.pages.data()}, q.data(),
                                f.cache, out.data())
                  .ok());
  for (int i : {0, 13, 29}) {
    std::vector<int> pos(61 + i);
    for (int k = 0; k < 61 + i; ++k) pos[k] = k;
    const auto t = Truth(f, p, q, i, 0, 6, pos);
    for (int d = 0; d < 128; ++d) ASSERT_NEAR(out[(i * 8 + 6) * 128 + d], t[d], 1e-5);
  }
  EXPECT_DOUBLE_EQ(AttentionFlops(p, rctx), 2.0 * 8 * 256 * (61 + 90) * 30 / 2.0);
}

TEST(AttentionCpu, RejectsBadGrouping) {
  AttentionProblem p;
  p.rows = 1;
  p.q_heads = 6;
  p.kv_heads = 4;
  p.k_dim = p.v_dim = 128;
  p.max_pages = 1;
  HostPagedKv c;
  EXPECT_EQ(PagedAttentionCpu(p, {}, nullptr, c, nullptr).code(), StatusCode::kInvalidConfig);
}

}  // namespace
}  // namespace capplan::kernels
