// Every attention-side CUDA kernel against its CPU reference on random
// shapes (label: gpu; skipped without a device).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "kernels/attention/attention.h"
#include "kernels/attention/attention_cuda.h"
#include "kernels/attention/elementwise.h"
#include "kernels/attention/paged_kv.h"
#include "kernels/formats/fp8.h"
#include "kernels/harness/check.h"
#include "kernels/harness/cuda_timer.h"
#include "kernels/harness/device_buffer.h"
#include "tests/kernels/attention/attention_test_util.h"
#include "tests/kernels/harness/gpu_test_util.h"

namespace capplan::kernels {
namespace {

using testing::FillCache;
using testing::Filled;
using testing::RandomBf16;

// Device copies of a host cache and page table.
struct DeviceCache {
  DeviceBuffer<> k, v, tags, pages, epochs, req, lens;
  PagedKvDevice cache;
  PageTableDevice pt;
  Status Upload(const Filled& f) {
    CAPPLAN_RETURN_IF_ERROR(k.Upload(f.cache.k));
    CAPPLAN_RETURN_IF_ERROR(v.Upload(f.cache.v));
    CAPPLAN_RETURN_IF_ERROR(tags.Upload(f.cache.tags));
    CAPPLAN_RETURN_IF_ERROR(pages.Upload(f.pt.pages));
    CAPPLAN_RETURN_IF_ERROR(epochs.Upload(f.pt.epochs));
    CAPPLAN_RETURN_IF_ERROR(req.Upload(f.pt.request_ids));
    CAPPLAN_RETURN_IF_ERROR(lens.Upload(f.pt.seq_lens));
    cache = {f.cache.layout,       k.get(),         v.get(),
             tags.as<KvPageTag>(), f.cache.k_scale, f.cache.v_scale};
    pt = {f.pt.batch,        f.pt.max_pages,    pages.as<int32_t>(), epochs.as<uint32_t>(),
          req.as<int64_t>(), lens.as<int32_t>()};
    return Status::Ok();
  }
};

PagedKvLayout Layout(int kv_heads, int k_dim, int v_dim, int page, KvDtype dt) {
  PagedKvLayout l;
  l.kv_heads = kv_heads;
  l.k_dim = k_dim;
  l.v_dim = v_dim;
  l.page_size = page;
  l.dtype = dt;
  return l;
}

TEST(AppendKvGpu, MatchesCpuBytesAndTags) {
  CAPPLAN_REQUIRE_CUDA_DEVICE();
  for (KvDtype dt : {KvDtype::kBf16, KvDtype::kFp8}) {
    for (auto [kvh, kd, vd, ps] :
         {std::make_tuple(2, 128, 128, 16), std::make_tuple(1, 576, 0, 64)}) {
      // Start from an empty (poisoned) cache sized for these sequences.
      const std::vector<int32_t> lens = {40, 130, 7};
      const float scale = dt == KvDtype::kFp8 ? 4.5f / kFp8E4m3Max : 1.0f;
      Filled f = FillCache(lens, Layout(kvh, kd, vd, ps, dt), scale, scale, 61);
      HostPagedKv empty = HostPagedKv::Make(f.cache.layout, scale, scale);
      Filled start = f;
      start.cache = empty;
      DeviceCache dc;
      CAPPLAN_ASSERT_OK(dc.Upload(start));
      // Append every token of every row in one launch.
      std::vector<Bf16> kall, vall;
      std::vector<int32_t> rows, pos;
      for (int b = 0; b < 3; ++b) {
        kall.insert(kall.end(), f.k_src[b].begin(), f.k_src[b].end());
        vall.insert(vall.end(), f.v_src[b].begin(), f.v_src[b].end());
        for (int i = 0; i < lens[b]; ++i) {
          rows.push_back(b);
          pos.push_back(i);
        }
      }
      DeviceBuffer<> dk, dv, dr, dp, dbad;
      CAPPLAN_ASSERT_OK(dk.Upload(kall));
      CAPPLAN_ASSERT_OK(dv.Upload(vall));
      CAPPLAN_ASSERT_OK(dr.Upload(rows));
      CAPPLAN_ASSERT_OK(dp.Upload(pos));
      CAPPLAN_ASSERT_OK(dbad.Upload(std::vector<int>{0}));
      CAPPLAN_ASSERT_OK(LaunchAppendKv(static_cast<int>(rows.size()), dk.as<Bf16>(),
                                       vd ? dv.as<Bf16>() : nullptr, dr.as<int32_t>(),
                                       dp.as<int32_t>(), dc.pt, dc.cache, dbad.as<int>()));
      std::vector<uint8_t> gk, gv;
      std::vector<KvPageTag> gt;
      std::vector<int> bad;
      CAPPLAN_ASSERT_OK(dc.k.Download(&gk));
      CAPPLAN_ASSERT_OK(dc.v.Download(&gv));
      CAPPLAN_ASSERT_OK(dc.tags.Download(&gt));
      CAPPLAN_ASSERT_OK(dbad.Download(&bad));
      EXPECT_EQ(bad[0], 0);
      EXPECT_EQ(gk, f.cache.k) << KvDtypeName(dt) << " k_dim " << kd;
      EXPECT_EQ(gv, f.cache.v);
      ASSERT_EQ(gt.size(), f.cache.tags.size());
      for (size_t i = 0; i < gt.size(); ++i) {
        EXPECT_EQ(std::memcmp(&gt[i], &f.cache.tags[i], sizeof(KvPageTag)), 0) << "page " << i;
      }
    }
  }
}

TEST(VerifyKvGpu, CountsTheSameMismatchesAsCpu) {
  CAPPLAN_REQUIRE_CUDA_DEVICE();
  Filled f = FillCache({40, 300, 20, 64}, Layout(1, 128, 128, 16, KvDtype::kBf16), 1, 1, 67);
  Filled bad = f;
  std::swap(bad.pt.pages[0], bad.pt.pages[bad.pt.max_pages]);
  bad.pt.epochs[bad.pt.max_pages + 5] ^= 1;
  bad.pt.pages[2 * bad.pt.max_pages + 1] = kKvPoisonPage;
  for (const Filled* c : {&f, &bad}) {
    DeviceCache dc;
    CAPPLAN_ASSERT_OK(dc.Upload(*c));
    DeviceBuffer<> out, count;
    CAPPLAN_ASSERT_OK(out.Allocate(8 * sizeof(IntegrityMismatch)));
    CAPPLAN_ASSERT_OK(count.Allocate(sizeof(int)));
    CAPPLAN_ASSERT_OK(LaunchVerifyKvIntegrity(dc.pt, dc.cache.tags, c->cache.layout.num_pages, 16,
                                              8, out.as<IntegrityMismatch>(), count.as<int>()));
    std::vector<int> n;
    std::vector<IntegrityMismatch> got;
    CAPPLAN_ASSERT_OK(count.Download(&n));
    CAPPLAN_ASSERT_OK(out.Download(&got));
    const IntegrityReport ref = VerifyKvIntegrityCpu(c->pt, c->cache.tags, 16, 8);
    ASSERT_EQ(n[0], ref.count);
    got.resize(std::min(n[0], 8));
    auto key = [](const IntegrityMismatch& m) { return std::make_pair(m.row, m.logical_page); };
    std::sort(got.begin(), got.end(), [&](auto& a, auto& b) { return key(a) < key(b); });
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(key(got[i]), key(ref.first[i]));
      EXPECT_EQ(got[i].physical_page, ref.first[i].physical_page);
      EXPECT_EQ(got[i].found.request, ref.first[i].found.request);
    }
  }
  // Clean table really is clean (ref.count == 0 checked above for &f).
  EXPECT_EQ(VerifyKvIntegrityCpu(f.pt, f.cache.tags, 16, 8).count, 0);
}

struct AttnCase {
  const char* name;
  int q_heads, kv_heads, k_dim, v_dim, page;
  KvDtype dt;
  std::vector<int32_t> lens;
  int topk;      // DSA when > 0
  bool prefill;  // rows = a causal chunk of the last sequence
  int sm_count;  // planner input: small values force split-KV
};

void PrintTo(const AttnCase& c, std::ostream* os) { *os << c.name; }

class PagedAttentionGpu : public ::testing::TestWithParam<AttnCase> {};

TEST_P(PagedAttentionGpu, MatchesCpuReference) {
  CAPPLAN_REQUIRE_CUDA_DEVICE();
  const AttnCase& c = GetParam();
  const bool mla = c.v_dim == 0;
  const float scale = c.dt == KvDtype::kFp8 ? 4.5f / kFp8E4m3Max : 1.0f;
  const Filled f = FillCache(c.lens, Layout(c.kv_heads, c.k_dim, c.v_dim, c.page, c.dt), scale,
                             scale, 71 + c.q_heads);
  AttentionProblem p;
  p.q_heads = c.q_heads;
  p.kv_heads = c.kv_heads;
  p.k_dim = c.k_dim;
  p.v_dim = mla ? kMlaLatentDim : c.v_dim;
  p.v_from_k = mla;
  p.sm_scale = 1.0f / std::sqrt(mla ? 192.0f : static_cast<float>(c.k_dim));
  p.k_scale = scale;
  p.v_scale = scale;
  p.page_size = c.page;
  p.max_pages = f.pt.max_pages;
  p.kv_dtype = c.dt;
  p.topk = c.topk;
  std::vector<int32_t> row_seq, row_ctx, topk_idx;
  if (c.prefill) {
    const int last = static_cast<int>(c.lens.size()) - 1;
    const int n = std::min(24, c.lens[last]);
    MakePrefillRows(last, c.lens[last] - n, n, &row_seq, &row_ctx);
  } else {
    for (size_t b = 0; b < c.lens.size(); ++b) {
      row_seq.push_back(static_cast<int32_t>(b));
      row_ctx.push_back(c.lens[b]);
    }
  }
  p.rows = static_cast<int>(row_seq.size());
  if (c.topk > 0) {
    std::mt19937 rng(5);
    for (int r = 0; r < p.rows; ++r) {
      for (int t = 0; t < c.topk; ++t) {
        topk_idx.push_back(t % 5 == 4 ? -1 : static_cast<int32_t>(rng() % row_ctx[r]));
      }
    }
  }
  const auto q =
      RandomBf16(static_cast<size_t>(p.rows) * p.q_heads * p.k_dim, 73, mla ? 0.5f : 1.0f);
  std::vector<float> ref(static_cast<size_t>(p.rows) * p.q_heads * p.v_dim);
  AttentionRows hr{row_seq.data(), row_ctx.data(), c.topk ? topk_idx.data() : nullptr,
                   f.pt.pages.data()};
  CAPPLAN_ASSERT_OK(PagedAttentionCpu(p, hr, q.data(), f.cache, ref.data()));

  DeviceCache dc;
  CAPPLAN_ASSERT_OK(dc.Upload(f));
  DeviceBuffer<> dq, dseq, dctx, dtopk, dout, ws;
  CAPPLAN_ASSERT_OK(dq.Upload(q));
  CAPPLAN_ASSERT_OK(dseq.Upload(row_seq));
  CAPPLAN_ASSERT_OK(dctx.Upload(row_ctx));
  if (c.topk) CAPPLAN_ASSERT_OK(dtopk.Upload(topk_idx));
  CAPPLAN_ASSERT_OK(dout.Allocate(ref.size() * 2));
  CAPPLAN_ASSERT_OK(dout.Poison());
  const int max_tokens = c.topk ? c.topk : *std::max_element(row_ctx.begin(), row_ctx.end());
  const AttentionPlan plan = PlanPagedAttention(p, max_tokens, c.sm_count);
  CAPPLAN_ASSERT_OK(ws.Allocate(plan.workspace_bytes));
  AttentionRows dr{dseq.as<int32_t>(), dctx.as<int32_t>(), c.topk ? dtopk.as<int32_t>() : nullptr,
                   dc.pages.as<int32_t>()};
  CAPPLAN_ASSERT_OK(
      LaunchPagedAttention(p, dr, dq.as<Bf16>(), dc.cache, plan, ws.get(), dout.as<Bf16>()));
  std::vector<uint16_t> got_bits;
  CAPPLAN_ASSERT_OK(dout.Download(&got_bits));
  std::vector<float> got(got_bits.size());
  for (size_t i = 0; i < got.size(); ++i) got[i] = Bf16BitsToFloat(got_bits[i]);
  // BF16 output: 2^-8 relative rounding, plus float-vs-double accumulation.
  const CheckResult r = Check(got, ref, 2e-3, 1e-2);
  EXPECT_TRUE(r.pass) << c.name << " splits=" << plan.num_splits << "\n" << r.report;
}

std::vector<AttnCase> Cases() {
  using K = KvDtype;
  return {
      {"gqa_bf16_p16", 8, 1, 128, 128, 16, K::kBf16, {1, 17, 300, 64}, 0, false, 132},
      {"gqa_fp8_p64", 8, 2, 128, 128, 64, K::kFp8, {5, 129, 700}, 0, false, 132},
      {"gqa_bf16_split", 12, 1, 128, 128, 16, K::kBf16, {2000, 33}, 0, false, 132},
      {"gqa_fp8_split", 4, 1, 128, 128, 64, K::kFp8, {1500}, 0, false, 132},
      {"mha_bf16", 4, 4, 128, 128, 16, K::kBf16, {90, 3}, 0, false, 4},
      {"mla_bf16_h16", 16, 1, 576, 0, 64, K::kBf16, {100, 600}, 0, false, 132},
      {"mla_fp8_h64_split", 64, 1, 576, 0, 64, K::kFp8, {1100}, 0, false, 132},
      {"dsa_bf16_top256", 8, 1, 576, 0, 64, K::kBf16, {700, 2100}, 256, false, 132},
      {"prefill_gqa_bf16", 8, 2, 128, 128, 16, K::kBf16, {10, 200}, 0, true, 132},
  };
}

INSTANTIATE_TEST_SUITE_P(Shapes, PagedAttentionGpu, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(PagedAttentionGpuPlan, SplitsOnlyWhenTheGridIsSmall) {
  AttentionProblem p;
  p.rows = 1;
  p.q_heads = 8;
  p.kv_heads = 1;
  p.k_dim = p.v_dim = 128;
  p.max_pages = 1;
  AttentionPlan plan = PlanPagedAttention(p, 131072, 132);
  EXPECT_GT(plan.num_splits, 1);
  EXPECT_GE(plan.split_tokens, 256);
  EXPECT_EQ(plan.split_tokens % 16, 0);
  EXPECT_GE(plan.num_splits * plan.split_tokens, 131072);
  p.rows = 300;  // >= 2 CTAs per SM already
  plan = PlanPagedAttention(p, 131072, 132);
  EXPECT_EQ(plan.num_splits, 1);
  EXPECT_EQ(plan.workspace_bytes, 0u);
}

TEST(ElementwiseGpu, MatchCpuReferences) {
  CAPPLAN_REQUIRE_CUDA_DEVICE();
  const int n = 37, d = 1536;
  const auto x = RandomBf16(n * d, 81), res0 = RandomBf16(n * d, 82), w = RandomBf16(d, 83);
  auto res_cpu = res0;
  std::vector<float> y_ref(n * d);
  FusedAddRmsNormCpu(n, d, 1e-6f, x.data(), res_cpu.data(), w.data(), y_ref.data());
  DeviceBuffer<> dx, dres, dw, dy;
  CAPPLAN_ASSERT_OK(dx.Upload(x));
  CAPPLAN_ASSERT_OK(dres.Upload(res0));
  CAPPLAN_ASSERT_OK(dw.Upload(w));
  CAPPLAN_ASSERT_OK(dy.Allocate(n * d * 2));
  CAPPLAN_ASSERT_OK(dy.Poison());
  CAPPLAN_ASSERT_OK(LaunchFusedAddRmsNorm(n, d, 1e-6f, dx.as<Bf16>(), dres.as<Bf16>(),
                                          dw.as<Bf16>(), dy.as<Bf16>()));
  auto to_float = [](const std::vector<uint16_t>& b) {
    std::vector<float> f(b.size());
    for (size_t i = 0; i < b.size(); ++i) f[i] = Bf16BitsToFloat(b[i]);
    return f;
  };
  std::vector<uint16_t> yb, rb;
  CAPPLAN_ASSERT_OK(dy.Download(&yb));
  CAPPLAN_ASSERT_OK(dres.Download(&rb));
  CheckResult r = Check(to_float(yb), y_ref, 1e-3, 1e-2);
  EXPECT_TRUE(r.pass) << "rmsnorm\n" << r.report;
  for (int i = 0; i < n * d; ++i) ASSERT_EQ(rb[i], res_cpu[i].bits) << "residual " << i;

  const auto gu = RandomBf16(n * 2 * d, 84);
  std::vector<float> s_ref(n * d);
  SiluMulCpu(n, d, gu.data(), s_ref.data());
  DeviceBuffer<> dgu, ds;
  CAPPLAN_ASSERT_OK(dgu.Upload(gu));
  CAPPLAN_ASSERT_OK(ds.Allocate(n * d * 2));
  CAPPLAN_ASSERT_OK(ds.Poison());
  CAPPLAN_ASSERT_OK(LaunchSiluMul(n, d, dgu.as<Bf16>(), ds.as<Bf16>()));
  std::vector<uint16_t> sb;
  CAPPLAN_ASSERT_OK(ds.Download(&sb));
  r = Check(to_float(sb), s_ref, 1e-3, 1e-2);
  EXPECT_TRUE(r.pass) << "silu_mul\n" << r.report;

  const int heads = 4, hd = 576;
  const auto qx = RandomBf16(n * heads * hd, 85);
  std::vector<int32_t> pos(n);
  for (int i = 0; i < n; ++i) pos[i] = i * 97;
  std::vector<float> r_ref(qx.size());
  RopeCpu(n, heads, hd, 512, 64, 10000.0f, pos.data(), qx.data(), r_ref.data());
  DeviceBuffer<> dqx, dpos;
  CAPPLAN_ASSERT_OK(dqx.Upload(qx));
  CAPPLAN_ASSERT_OK(dpos.Upload(pos));
  CAPPLAN_ASSERT_OK(
      LaunchRope(n, heads, hd, 512, 64, 10000.0f, dpos.as<int32_t>(), dqx.as<Bf16>()));
  std::vector<uint16_t> qb;
  CAPPLAN_ASSERT_OK(dqx.Download(&qb));
  double max_x = 0;
  for (const Bf16& v : qx) {
    max_x = std::max(max_x, std::fabs(static_cast<double>(Bf16BitsToFloat(v.bits))));
  }
  r = Check(to_float(qb), r_ref, 2e-3 + RopeAngleTolerance(pos.back(), max_x), 1e-2);
  EXPECT_TRUE(r.pass) << "rope\n" << r.report;
}

}  // namespace
}  // namespace capplan::kernels
