// GPU paths of the attention-side suite cases: inputs generated on the
// device, small cases checked against the CPU reference on the same bytes,
// every case timed with the CUDA event timer (warm-up, L2 flush, median).
#ifdef CAPPLAN_HAVE_CUDA

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention/attention_cuda.h"
#include "kernels/attention/elementwise.h"
#include "kernels/attention/suite_cases.h"
#include "kernels/harness/check.h"
#include "kernels/harness/cuda_timer.h"
#include "kernels/harness/device_buffer.h"

namespace capplan::kernels {

namespace {

// CPU references are run only when cheap (<= ~0.3 s on one core).
constexpr double kMaxCheckFlops = 1.5e8;
// Each case gets at most this much timed GPU time.
constexpr double kCaseBudgetUs = 300e3;

// Times with few repeats first, then as many as fit the per-case budget.
Result<TimingStats> TimeAdaptive(const SuiteOptions& o, const std::function<Status()>& launch) {
  CudaTimerOptions probe{1, 1, o.flush_l2};
  CAPPLAN_ASSIGN_OR_RETURN(TimingStats t, TimeCuda(launch, probe));
  const int fit = static_cast<int>(kCaseBudgetUs / std::max(t.median_us, 1.0));
  CudaTimerOptions opt{o.timing_warmup,
                       std::clamp(fit, std::min(3, o.timing_repeats), o.timing_repeats),
                       o.flush_l2};
  return TimeCuda(launch, opt);
}

std::vector<float> Bf16ToFloat(const std::vector<uint16_t>& b) {
  std::vector<float> f(b.size());
  for (size_t i = 0; i < b.size(); ++i) f[i] = Bf16BitsToFloat(b[i]);
  return f;
}

Status FillKv(void* p, size_t n, KvDtype dt, uint32_t seed) {
  return dt == KvDtype::kFp8 ? FillRandomFp8Device(p, n, seed)
                             : FillRandomBf16Device(p, n, seed, 1.0f);
}

void RecordCheck(const CheckResult& r, MeasurementRecord* rec) {
  rec->check = r.pass ? "pass" : "fail";
  rec->max_abs_err = r.max_abs_err;
}

}  // namespace

Status RunAttentionCaseGpu(const SuiteOptions& o, const AttnCaseSpec& s, MeasurementSink* sink) {
  CAPPLAN_ASSIGN_OR_RETURN(CudaDeviceInfo dev, GetCudaDeviceInfo());
  std::vector<int32_t> lens, row_seq, row_ctx;
  RowsFor(s, &lens, &row_seq, &row_ctx);
  int num_pages = 0;
  const PageTable pt = MakeRandomPageTable(lens, s.page, o.seed, &num_pages);
  const float scale = s.dtype == KvDtype::kFp8 ? SuiteFp8Scale() : 1.0f;
  const AttentionProblem p = ProblemFor(s, static_cast<int>(row_seq.size()), pt.max_pages, scale);
  const PagedKvLayout l{num_pages, s.page, p.kv_heads, p.k_dim, p.v_from_k ? 0 : p.v_dim, s.dtype};
  const int eb = KvElemBytes(s.dtype);
  DeviceBuffer<> k, v, q, out, ws, pages, dseq, dctx, dtopk;
  CAPPLAN_RETURN_IF_ERROR(k.Allocate(l.KElems() * eb));
  CAPPLAN_RETURN_IF_ERROR(v.Allocate(l.VElems() * eb));
  CAPPLAN_RETURN_IF_ERROR(FillKv(k.get(), l.KElems(), s.dtype, o.seed + 1));
  CAPPLAN_RETURN_IF_ERROR(FillKv(v.get(), l.VElems(), s.dtype, o.seed + 2));
  const size_t q_elems = static_cast<size_t>(p.rows) * p.q_heads * p.k_dim;
  const size_t o_elems = static_cast<size_t>(p.rows) * p.q_heads * p.v_dim;
  CAPPLAN_RETURN_IF_ERROR(q.Allocate(q_elems * 2));
  CAPPLAN_RETURN_IF_ERROR(FillRandomBf16Device(q.get(), q_elems, o.seed + 3, 1.0f));
  CAPPLAN_RETURN_IF_ERROR(out.Allocate(o_elems * 2));
  CAPPLAN_RETURN_IF_ERROR(out.Poison());
  CAPPLAN_RETURN_IF_ERROR(pages.Upload(pt.pages));
  CAPPLAN_RETURN_IF_ERROR(dseq.Upload(row_seq));
  CAPPLAN_RETURN_IF_ERROR(dctx.Upload(row_ctx));
  const std::vector<int32_t> topk = RandomTopk(p, row_ctx, o.seed + 4);
  if (!topk.empty()) CAPPLAN_RETURN_IF_ERROR(dtopk.Upload(topk));
  const int max_tokens = p.topk ? p.topk : *std::max_element(row_ctx.begin(), row_ctx.end());
  const AttentionPlan plan = PlanPagedAttention(p, max_tokens, dev.sm_count);
  CAPPLAN_RETURN_IF_ERROR(ws.Allocate(plan.workspace_bytes));
  const PagedKvDevice cache{l, k.get(), v.get(), nullptr, scale, scale};
  const AttentionRows rows{dseq.as<int32_t>(), dctx.as<int32_t>(),
                           topk.empty() ? nullptr : dtopk.as<int32_t>(), pages.as<int32_t>()};
  auto launch = [&] {
    return LaunchPagedAttention(p, rows, q.as<Bf16>(), cache, plan, ws.get(), out.as<Bf16>());
  };
  MeasurementRecord rec = AttentionRecord(s, p, row_ctx, s.chunk ? 1 : p.rows);
  rec.shape.push_back({"num_splits", plan.num_splits});
  if (o.ForceCheck() || AttentionFlops(p, row_ctx) <= kMaxCheckFlops) {
    CAPPLAN_RETURN_IF_ERROR(launch());
    std::vector<uint16_t> got;
    CAPPLAN_RETURN_IF_ERROR(out.Download(&got));
    HostPagedKv hc = HostPagedKv::Make(l, scale, scale);
    CAPPLAN_RETURN_IF_ERROR(k.Download(&hc.k));
    CAPPLAN_RETURN_IF_ERROR(v.Download(&hc.v));
    std::vector<uint16_t> qb;
    CAPPLAN_RETURN_IF_ERROR(q.Download(&qb));
    std::vector<float> ref(o_elems);
    const AttentionRows hrows{row_seq.data(), row_ctx.data(), topk.empty() ? nullptr : topk.data(),
                              pt.pages.data()};
    CAPPLAN_RETURN_IF_ERROR(
        PagedAttentionCpu(p, hrows, reinterpret_cast<const Bf16*>(qb.data()), hc, ref.data()));
    RecordCheck(Check(Bf16ToFloat(got), ref, 2e-3, 1e-2), &rec);
  } else {
    rec.check = "skipped";
  }
  CAPPLAN_ASSIGN_OR_RETURN(rec.timing, TimeAdaptive(o, launch));
  sink->Add(rec);
  return Status::Ok();
}

Status RunAppendCaseGpu(const SuiteOptions& o, const AttnCaseSpec& s, MeasurementSink* sink) {
  const int vd = s.heads.mla ? 0 : s.heads.v_dim;
  const std::vector<int32_t> lens(s.chunk ? 1 : s.batch, 2 * s.page);
  int num_pages = 0;
  // Decode-style append: one new token per request; each request owns two
  // pages and writes into its second.
  const PageTable pt = MakeRandomPageTable(lens, s.page, o.seed, &num_pages);
  const float scale = s.dtype == KvDtype::kFp8 ? SuiteFp8Scale() : 1.0f;
  const PagedKvLayout l{num_pages, s.page, s.heads.kv_heads, s.heads.k_dim, vd, s.dtype};
  const int eb = KvElemBytes(s.dtype);
  const size_t kn = static_cast<size_t>(s.batch) * l.kv_heads * l.k_dim;
  const size_t vn = static_cast<size_t>(s.batch) * l.kv_heads * vd;
  std::vector<int32_t> rows(s.batch), pos(s.batch);
  for (int i = 0; i < s.batch; ++i) {
    rows[i] = i;
    pos[i] = s.page + i % s.page;
  }
  DeviceBuffer<> k, v, tags, kn_d, vn_d, rows_d, pos_d, pages, epochs, req, slen, bad;
  CAPPLAN_RETURN_IF_ERROR(k.Allocate(l.KElems() * eb));
  CAPPLAN_RETURN_IF_ERROR(k.Poison());
  CAPPLAN_RETURN_IF_ERROR(v.Allocate(l.VElems() * eb));
  CAPPLAN_RETURN_IF_ERROR(v.Poison());
  CAPPLAN_RETURN_IF_ERROR(tags.Allocate(sizeof(KvPageTag) * num_pages));
  CAPPLAN_RETURN_IF_ERROR(kn_d.Allocate(kn * 2));
  CAPPLAN_RETURN_IF_ERROR(vn_d.Allocate(vn * 2));
  CAPPLAN_RETURN_IF_ERROR(FillRandomBf16Device(kn_d.get(), kn, o.seed + 1, 1.0f));
  CAPPLAN_RETURN_IF_ERROR(FillRandomBf16Device(vn_d.get(), vn, o.seed + 2, 1.0f));
  CAPPLAN_RETURN_IF_ERROR(rows_d.Upload(rows));
  CAPPLAN_RETURN_IF_ERROR(pos_d.Upload(pos));
  CAPPLAN_RETURN_IF_ERROR(pages.Upload(pt.pages));
  CAPPLAN_RETURN_IF_ERROR(epochs.Upload(pt.epochs));
  CAPPLAN_RETURN_IF_ERROR(req.Upload(pt.request_ids));
  CAPPLAN_RETURN_IF_ERROR(slen.Upload(pt.seq_lens));
  CAPPLAN_RETURN_IF_ERROR(bad.Upload(std::vector<int>{0}));
  const PageTableDevice ptd{
      pt.batch,          pt.max_pages,      pages.as<int32_t>(), epochs.as<uint32_t>(),
      req.as<int64_t>(), slen.as<int32_t>()};
  const PagedKvDevice cache{l, k.get(), v.get(), tags.as<KvPageTag>(), scale, scale};
  auto launch = [&] {
    return LaunchAppendKv(s.batch, kn_d.as<Bf16>(), vd ? vn_d.as<Bf16>() : nullptr,
                          rows_d.as<int32_t>(), pos_d.as<int32_t>(), ptd, cache, bad.as<int>());
  };
  MeasurementRecord rec = AppendRecord(s);
  // Check: the same append on the CPU gives the same cache bytes.
  CAPPLAN_RETURN_IF_ERROR(launch());
  std::vector<uint16_t> knh, vnh;
  CAPPLAN_RETURN_IF_ERROR(kn_d.Download(&knh));
  CAPPLAN_RETURN_IF_ERROR(vn_d.Download(&vnh));
  HostPagedKv ref = HostPagedKv::Make(l, scale, scale);
  const AppendBatch ab{s.batch, reinterpret_cast<const Bf16*>(knh.data()),
                       vd ? reinterpret_cast<const Bf16*>(vnh.data()) : nullptr, rows.data(),
                       pos.data()};
  CAPPLAN_RETURN_IF_ERROR(AppendKvCpu(ab, pt, &ref));
  std::vector<uint8_t> gk, gv;
  std::vector<int> nbad;
  CAPPLAN_RETURN_IF_ERROR(k.Download(&gk));
  CAPPLAN_RETURN_IF_ERROR(v.Download(&gv));
  CAPPLAN_RETURN_IF_ERROR(bad.Download(&nbad));
  const bool same = gk == ref.k && gv == ref.v && nbad[0] == 0;
  rec.check = same ? "pass" : "fail";
  rec.max_abs_err = same ? 0.0 : 1.0;  // bytes either match exactly or not
  CAPPLAN_ASSIGN_OR_RETURN(rec.timing, TimeAdaptive(o, launch));
  sink->Add(rec);
  return Status::Ok();
}

Status RunVerifyCaseGpu(const SuiteOptions& o, const AttnCaseSpec& s, MeasurementSink* sink) {
  std::vector<KvPageTag> tags;
  const PageTable pt = CleanVerifyCase(s, o.seed, &tags);
  // One planted stale entry, so the check proves detection, not silence.
  PageTable bad_pt = pt;
  bad_pt.epochs[0] += 1;
  DeviceBuffer<> pages, epochs, req, slen, dtags, outb, count;
  CAPPLAN_RETURN_IF_ERROR(pages.Upload(bad_pt.pages));
  CAPPLAN_RETURN_IF_ERROR(epochs.Upload(bad_pt.epochs));
  CAPPLAN_RETURN_IF_ERROR(req.Upload(bad_pt.request_ids));
  CAPPLAN_RETURN_IF_ERROR(slen.Upload(bad_pt.seq_lens));
  CAPPLAN_RETURN_IF_ERROR(dtags.Upload(tags));
  CAPPLAN_RETURN_IF_ERROR(outb.Allocate(64 * sizeof(IntegrityMismatch)));
  CAPPLAN_RETURN_IF_ERROR(count.Allocate(sizeof(int)));
  const PageTableDevice ptd{bad_pt.batch,          bad_pt.max_pages,  pages.as<int32_t>(),
                            epochs.as<uint32_t>(), req.as<int64_t>(), slen.as<int32_t>()};
  auto launch = [&] {
    return LaunchVerifyKvIntegrity(ptd, dtags.as<KvPageTag>(), static_cast<int>(tags.size()),
                                   s.page, 64, outb.as<IntegrityMismatch>(), count.as<int>());
  };
  MeasurementRecord rec = VerifyRecord(s, pt.max_pages);
  CAPPLAN_RETURN_IF_ERROR(launch());
  std::vector<int> n;
  CAPPLAN_RETURN_IF_ERROR(count.Download(&n));
  const IntegrityReport ref = VerifyKvIntegrityCpu(bad_pt, tags, s.page, 64);
  rec.check = (n[0] == ref.count && ref.count == 1) ? "pass" : "fail";
  CAPPLAN_ASSIGN_OR_RETURN(rec.timing, TimeAdaptive(o, launch));
  sink->Add(rec);
  return Status::Ok();
}

Status RunElementwiseCaseGpu(const SuiteOptions& o, const ElementwiseCaseSpec& s,
                             MeasurementSink* sink) {
  MeasurementRecord rec = ElementwiseRecord(s);
  const bool check = o.ForceCheck() || static_cast<double>(s.n) * s.width <= 4e6;
  const size_t nw = static_cast<size_t>(s.n) * s.width;
  if (s.op == "rmsnorm") {
    DeviceBuffer<> x, res, w, y;
    CAPPLAN_RETURN_IF_ERROR(x.Allocate(nw * 2));
    CAPPLAN_RETURN_IF_ERROR(res.Allocate(nw * 2));
    CAPPLAN_RETURN_IF_ERROR(w.Allocate(s.width * 2));
    CAPPLAN_RETURN_IF_ERROR(y.Allocate(nw * 2));
    CAPPLAN_RETURN_IF_ERROR(y.Poison());
    CAPPLAN_RETURN_IF_ERROR(FillRandomBf16Device(x.get(), nw, o.seed + 1, 1.0f));
    CAPPLAN_RETURN_IF_ERROR(FillRandomBf16Device(res.get(), nw, o.seed + 2, 1.0f));
    CAPPLAN_RETURN_IF_ERROR(FillRandomBf16Device(w.get(), s.width, o.seed + 3, 1.0f));
    auto launch = [&] {
      return LaunchFusedAddRmsNorm(s.n, s.width, 1e-6f, x.as<Bf16>(), res.as<Bf16>(), w.as<Bf16>(),
                                   y.as<Bf16>());
    };
    if (check) {
      std::vector<uint16_t> xh, rh, wh, yh;
      CAPPLAN_RETURN_IF_ERROR(x.Download(&xh));
      CAPPLAN_RETURN_IF_ERROR(res.Download(&rh));
      CAPPLAN_RETURN_IF_ERROR(w.Download(&wh));
      CAPPLAN_RETURN_IF_ERROR(launch());
      CAPPLAN_RETURN_IF_ERROR(y.Download(&yh));
      std::vector<float> ref(nw);
      FusedAddRmsNormCpu(s.n, s.width, 1e-6f, reinterpret_cast<const Bf16*>(xh.data()),
                         reinterpret_cast<Bf16*>(rh.data()),
                         reinterpret_cast<const Bf16*>(wh.data()), ref.data());
      RecordCheck(Check(Bf16ToFloat(yh), ref, 1e-3, 1e-2), &rec);
    } else {
      rec.check = "skipped";
    }
    // Timed repeats keep adding x into the residual: values grow but stay
    // finite for the few dozen repeats the timer runs.
    CAPPLAN_ASSIGN_OR_RETURN(rec.timing, TimeAdaptive(o, launch));
  } else if (s.op == "silu_mul") {
    DeviceBuffer<> gu, y;
    CAPPLAN_RETURN_IF_ERROR(gu.Allocate(nw * 4));
    CAPPLAN_RETURN_IF_ERROR(y.Allocate(nw * 2));
    CAPPLAN_RETURN_IF_ERROR(y.Poison());
    CAPPLAN_RETURN_IF_ERROR(FillRandomBf16Device(gu.get(), 2 * nw, o.seed + 4, 1.0f));
    auto launch = [&] { return LaunchSiluMul(s.n, s.width, gu.as<Bf16>(), y.as<Bf16>()); };
    if (check) {
      std::vector<uint16_t> gh, yh;
      CAPPLAN_RETURN_IF_ERROR(gu.Download(&gh));
      CAPPLAN_RETURN_IF_ERROR(launch());
      CAPPLAN_RETURN_IF_ERROR(y.Download(&yh));
      std::vector<float> ref(nw);
      SiluMulCpu(s.n, s.width, reinterpret_cast<const Bf16*>(gh.data()), ref.data());
      RecordCheck(Check(Bf16ToFloat(yh), ref, 1e-3, 1e-2), &rec);
    } else {
      rec.check = "skipped";
    }
    CAPPLAN_ASSIGN_OR_RETURN(rec.timing, TimeAdaptive(o, launch));
  } else {
    const int heads = 8, rope = s.op == "rope_mla" ? 64 : s.width;
    const size_t n = static_cast<size_t>(s.n) * heads * s.width;
    std::vector<int32_t> pos(s.n);
    for (int i = 0; i < s.n; ++i) pos[i] = i;
    DeviceBuffer<> x, dpos;
    CAPPLAN_RETURN_IF_ERROR(x.Allocate(n * 2));
    CAPPLAN_RETURN_IF_ERROR(FillRandomBf16Device(x.get(), n, o.seed + 5, 1.0f));
    CAPPLAN_RETURN_IF_ERROR(dpos.Upload(pos));
    auto launch = [&] {
      return LaunchRope(s.n, heads, s.width, s.width - rope, rope, 10000.0f, dpos.as<int32_t>(),
                        x.as<Bf16>());
    };
    if (check) {
      std::vector<uint16_t> xh, yh;
      CAPPLAN_RETURN_IF_ERROR(x.Download(&xh));
      CAPPLAN_RETURN_IF_ERROR(launch());
      CAPPLAN_RETURN_IF_ERROR(x.Download(&yh));
      std::vector<float> ref(n);
      RopeCpu(s.n, heads, s.width, s.width - rope, rope, 10000.0f, pos.data(),
              reinterpret_cast<const Bf16*>(xh.data()), ref.data());
      double max_x = 0;
      for (float v : Bf16ToFloat(xh)) max_x = std::max(max_x, std::fabs(static_cast<double>(v)));
      RecordCheck(Check(Bf16ToFloat(yh), ref, 2e-3 + RopeAngleTolerance(s.n - 1, max_x), 1e-2),
                  &rec);
    } else {
      rec.check = "skipped";
    }
    CAPPLAN_ASSIGN_OR_RETURN(rec.timing, TimeAdaptive(o, launch));
  }
  sink->Add(rec);
  return Status::Ok();
}

}  // namespace capplan::kernels

#endif  // CAPPLAN_HAVE_CUDA
