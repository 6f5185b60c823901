// CPU (dry-run) paths of the attention-side suite cases, and the napkin
// math every record carries.
#include "kernels/attention/suite_cases.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "kernels/attention/elementwise.h"
#include "kernels/formats/fp8.h"
#include "kernels/harness/timing.h"

namespace capplan::kernels {

std::string AttnCaseSpec::Label() const {
  std::string l = kernel + "_b" + std::to_string(batch) + "_ctx" + std::to_string(ctx);
  if (heads.q_heads) {
    l += "_q" + std::to_string(heads.q_heads) + "_kv" + std::to_string(heads.kv_heads) + "_d" +
         std::to_string(heads.k_dim);
  }
  l += "_p" + std::to_string(page) + "_" + KvDtypeName(dtype);
  if (heads.topk) l += "_top" + std::to_string(heads.topk);
  if (chunk) l += "_chunk" + std::to_string(chunk);
  return l;
}

AttentionProblem ProblemFor(const AttnCaseSpec& s, int rows, int max_pages, float kv_scale) {
  AttentionProblem p;
  p.rows = rows;
  p.q_heads = s.heads.q_heads;
  p.kv_heads = s.heads.kv_heads;
  p.k_dim = s.heads.k_dim;
  p.v_dim = s.heads.v_dim;
  p.v_from_k = s.heads.mla;
  p.sm_scale = s.heads.sm_scale;
  p.k_scale = p.v_scale = kv_scale;
  p.page_size = s.page;
  p.max_pages = max_pages;
  p.topk = s.heads.topk;
  p.kv_dtype = s.dtype;
  return p;
}

void RowsFor(const AttnCaseSpec& s, std::vector<int32_t>* lens, std::vector<int32_t>* row_seq,
             std::vector<int32_t>* row_ctx) {
  if (s.chunk > 0) {
    lens->assign(1, s.ctx);
    MakePrefillRows(0, s.ctx - s.chunk, s.chunk, row_seq, row_ctx);
  } else {
    lens->assign(s.batch, s.ctx);
    for (int b = 0; b < s.batch; ++b) {
      row_seq->push_back(b);
      row_ctx->push_back(s.ctx);
    }
  }
}

std::vector<int32_t> RandomTopk(const AttentionProblem& p, const std::vector<int32_t>& row_ctx,
                                uint32_t seed) {
  std::vector<int32_t> idx;
  if (p.topk == 0) return idx;
  std::mt19937 rng(seed);
  idx.reserve(static_cast<size_t>(p.rows) * p.topk);
  for (int r = 0; r < p.rows; ++r) {
    // Distinct positions (an indexer returns a set): a random subset, or
    // every position followed by -1 padding when ctx < topk.
    std::vector<int32_t> all(row_ctx[r]);
    for (int i = 0; i < row_ctx[r]; ++i) all[i] = i;
    std::shuffle(all.begin(), all.end(), rng);
    for (int t = 0; t < p.topk; ++t) idx.push_back(t < row_ctx[r] ? all[t] : -1);
  }
  return idx;
}

namespace {
std::string CaseDtype() { return "bf16"; }  // activations/queries; math is FP32 FMA (variant)
}  // namespace

MeasurementRecord AttentionRecord(const AttnCaseSpec& s, const AttentionProblem& p,
                                  const std::vector<int32_t>& row_ctx, int distinct_rows) {
  MeasurementRecord r;
  r.kernel = s.kernel;
  r.op_class = "attention";
  r.variant = s.variant;
  r.dtype = CaseDtype();
  r.kv_dtype = KvDtypeName(s.dtype);
  r.shape = {{"batch", s.batch},       {"context", s.ctx},    {"q_heads", p.q_heads},
             {"kv_heads", p.kv_heads}, {"head_dim", p.k_dim}, {"v_head_dim", p.v_dim},
             {"page_size", s.page}};
  if (p.topk) r.shape.push_back({"topk", p.topk});
  if (s.chunk) r.shape.push_back({"chunk", s.chunk});
  r.bytes = AttentionBytes(p, row_ctx, distinct_rows);
  r.flops = AttentionFlops(p, row_ctx);
  return r;
}

MeasurementRecord AppendRecord(const AttnCaseSpec& s) {
  MeasurementRecord r;
  r.kernel = s.kernel;
  r.op_class = "attention";
  r.variant = s.heads.mla ? "mla_latent" : "k_and_v";
  r.dtype = "bf16";
  r.kv_dtype = KvDtypeName(s.dtype);
  const int vd = s.heads.mla ? 0 : s.heads.v_dim;
  r.shape = {{"tokens", s.batch},
             {"kv_heads", s.heads.kv_heads},
             {"head_dim", s.heads.k_dim},
             {"v_head_dim", vd},
             {"page_size", s.page}};
  const double elems = static_cast<double>(s.batch) * s.heads.kv_heads * (s.heads.k_dim + vd);
  // BF16 in, cache element out, plus row/pos (8 B), page-table entry and
  // epoch (8 B) and the 16-B tag per token.
  r.bytes = elems * (2 + KvElemBytes(s.dtype)) + 32.0 * s.batch;
  r.flops = s.dtype == KvDtype::kFp8 ? elems : 0.0;  // one scale multiply per element
  return r;
}

PageTable CleanVerifyCase(const AttnCaseSpec& s, uint32_t seed, std::vector<KvPageTag>* tags) {
  const std::vector<int32_t> lens(s.batch, s.ctx);
  int num_pages = 0;
  PageTable pt = MakeRandomPageTable(lens, s.page, seed, &num_pages);
  tags->assign(num_pages, KvPageTag{kKvNoRequest, -1, 0});
  for (int b = 0; b < pt.batch; ++b) {
    for (int j = 0; j * s.page < s.ctx; ++j) {
      (*tags)[pt.Page(b, j)] = {pt.request_ids[b], j,
                                pt.epochs[static_cast<size_t>(b) * pt.max_pages + j]};
    }
  }
  return pt;
}

MeasurementRecord VerifyRecord(const AttnCaseSpec& s, int max_pages) {
  MeasurementRecord r;
  r.kernel = s.kernel;
  r.op_class = "overhead";
  r.dtype = "int32";
  r.shape = {{"batch", s.batch}, {"context", s.ctx}, {"page_size", s.page}};
  const double live = static_cast<double>(s.batch) * ((s.ctx + s.page - 1) / s.page);
  r.bytes = static_cast<double>(s.batch) * max_pages * 8.0 + live * 16.0 + s.batch * 12.0;
  r.flops = 0;
  return r;
}

MeasurementRecord ElementwiseRecord(const ElementwiseCaseSpec& s) {
  MeasurementRecord r;
  r.kernel =
      s.op == "rmsnorm" ? "fused_add_rmsnorm" : (s.op == "silu_mul" ? "silu_and_mul" : "rope");
  r.op_class = "elementwise";
  r.dtype = "bf16";
  const double n = s.n, w = s.width;
  if (s.op == "rmsnorm") {
    r.shape = {{"tokens", s.n}, {"hidden", s.width}};
    r.bytes = n * w * 2 * 4 + w * 2;  // read x, residual; write residual, y; weights
    r.flops = 4 * n * w;
  } else if (s.op == "silu_mul") {
    r.shape = {{"tokens", s.n}, {"width", s.width}};
    r.bytes = n * w * 2 * 3;
    r.flops = 5 * n * w;
  } else {
    const int heads = 8, rope = s.op == "rope_mla" ? 64 : s.width;  // 8 q heads per rank at TP8
    r.variant = s.op;
    r.shape = {{"tokens", s.n}, {"heads", heads}, {"head_dim", s.width}, {"rope_dim", rope}};
    r.bytes = n * heads * rope * 2 * 2 + n * 4;
    r.flops = n * heads * rope * 3;
  }
  return r;
}

namespace {

constexpr int kCpuRepeats = 3;

std::vector<Bf16> RandomBf16Vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<Bf16> v(n);
  for (auto& x : v) x = ToBf16(d(rng));
  return v;
}

// Random cache contents written straight into the host buffers.
void FillHostCache(HostPagedKv* c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  auto fill = [&](std::vector<uint8_t>* buf) {
    if (c->layout.dtype == KvDtype::kFp8) {
      for (auto& b : *buf) b = FloatToFp8E4m3(d(rng) / SuiteFp8Scale());
    } else {
      for (size_t i = 0; i + 1 < buf->size(); i += 2) {
        const uint16_t bits = FloatToBf16Bits(d(rng));
        std::memcpy(&(*buf)[i], &bits, 2);
      }
    }
  };
  fill(&c->k);
  fill(&c->v);
}

Status RunAttentionCaseCpu(const SuiteOptions& o, const AttnCaseSpec& s, MeasurementSink* sink) {
  std::vector<int32_t> lens, row_seq, row_ctx;
  RowsFor(s, &lens, &row_seq, &row_ctx);
  int num_pages = 0;
  const PageTable pt = MakeRandomPageTable(lens, s.page, o.seed, &num_pages);
  const float scale = s.dtype == KvDtype::kFp8 ? SuiteFp8Scale() : 1.0f;
  AttentionProblem p = ProblemFor(s, static_cast<int>(row_seq.size()), pt.max_pages, scale);
  PagedKvLayout l{num_pages, s.page, p.kv_heads, p.k_dim, p.v_from_k ? 0 : p.v_dim, s.dtype};
  HostPagedKv cache = HostPagedKv::Make(l, scale, scale);
  FillHostCache(&cache, o.seed + 1);
  const auto topk = RandomTopk(p, row_ctx, o.seed + 2);
  const auto q = RandomBf16Vec(static_cast<size_t>(p.rows) * p.q_heads * p.k_dim, o.seed + 3);
  std::vector<float> out(static_cast<size_t>(p.rows) * p.q_heads * p.v_dim);
  AttentionRows rows{row_seq.data(), row_ctx.data(), topk.empty() ? nullptr : topk.data(),
                     pt.pages.data()};
  Status st;
  MeasurementRecord rec = AttentionRecord(s, p, row_ctx, s.chunk ? 1 : p.rows);
  rec.timing = TimeCpu([&] { st = PagedAttentionCpu(p, rows, q.data(), cache, out.data()); }, 0,
                       kCpuRepeats);
  CAPPLAN_RETURN_IF_ERROR(st);
  rec.check = "skipped";  // the reference itself ran
  sink->Add(rec);
  return Status::Ok();
}

Status RunAppendCaseCpu(const SuiteOptions& o, const AttnCaseSpec& s, MeasurementSink* sink) {
  const int vd = s.heads.mla ? 0 : s.heads.v_dim;
  const std::vector<int32_t> lens(s.batch, 2 * s.page);
  int num_pages = 0;
  const PageTable pt = MakeRandomPageTable(lens, s.page, o.seed, &num_pages);
  const float scale = s.dtype == KvDtype::kFp8 ? SuiteFp8Scale() : 1.0f;
  HostPagedKv cache = HostPagedKv::Make(
      PagedKvLayout{num_pages, s.page, s.heads.kv_heads, s.heads.k_dim, vd, s.dtype}, scale, scale);
  const auto k = RandomBf16Vec(static_cast<size_t>(s.batch) * s.heads.kv_heads * s.heads.k_dim, 1);
  const auto v = RandomBf16Vec(static_cast<size_t>(s.batch) * s.heads.kv_heads * vd, 2);
  std::vector<int32_t> rows(s.batch), pos(s.batch);
  for (int i = 0; i < s.batch; ++i) {
    rows[i] = i;
    pos[i] = s.page + i % s.page;
  }
  AppendBatch ab{s.batch, k.data(), vd ? v.data() : nullptr, rows.data(), pos.data()};
  Status st;
  MeasurementRecord rec = AppendRecord(s);
  rec.timing = TimeCpu([&] { st = AppendKvCpu(ab, pt, &cache); }, 0, kCpuRepeats);
  CAPPLAN_RETURN_IF_ERROR(st);
  rec.check = "skipped";
  sink->Add(rec);
  return Status::Ok();
}

Status RunVerifyCaseCpu(const SuiteOptions& o, const AttnCaseSpec& s, MeasurementSink* sink) {
  std::vector<KvPageTag> tags;
  const PageTable pt = CleanVerifyCase(s, o.seed, &tags);
  IntegrityReport rep;
  MeasurementRecord rec = VerifyRecord(s, pt.max_pages);
  rec.timing = TimeCpu([&] { rep = VerifyKvIntegrityCpu(pt, tags, s.page, 64); }, 0, kCpuRepeats);
  if (rep.count != 0) return Status::Internal("clean page table reported mismatches");
  rec.check = "pass";
  sink->Add(rec);
  return Status::Ok();
}

Status RunElementwiseCaseCpu(const SuiteOptions& /*o*/, const ElementwiseCaseSpec& s,
                             MeasurementSink* sink) {
  MeasurementRecord rec = ElementwiseRecord(s);
  if (s.op == "rmsnorm") {
    const auto x = RandomBf16Vec(static_cast<size_t>(s.n) * s.width, 1);
    auto res = RandomBf16Vec(static_cast<size_t>(s.n) * s.width, 2);
    const auto w = RandomBf16Vec(s.width, 3);
    std::vector<float> y(x.size());
    rec.timing = TimeCpu(
        [&] { FusedAddRmsNormCpu(s.n, s.width, 1e-6f, x.data(), res.data(), w.data(), y.data()); },
        0, kCpuRepeats);
  } else if (s.op == "silu_mul") {
    const auto gu = RandomBf16Vec(static_cast<size_t>(s.n) * 2 * s.width, 4);
    std::vector<float> y(static_cast<size_t>(s.n) * s.width);
    rec.timing = TimeCpu([&] { SiluMulCpu(s.n, s.width, gu.data(), y.data()); }, 0, kCpuRepeats);
  } else {
    const int heads = 8, rope = s.op == "rope_mla" ? 64 : s.width;
    const auto x = RandomBf16Vec(static_cast<size_t>(s.n) * heads * s.width, 5);
    std::vector<int32_t> pos(s.n);
    for (int i = 0; i < s.n; ++i) pos[i] = i;
    std::vector<float> y(x.size());
    rec.timing = TimeCpu(
        [&] {
          RopeCpu(s.n, heads, s.width, s.width - rope, rope, 10000.0f, pos.data(), x.data(),
                  y.data());
        },
        0, kCpuRepeats);
  }
  rec.check = "skipped";
  sink->Add(rec);
  return Status::Ok();
}

#ifndef CAPPLAN_HAVE_CUDA
Status NoCuda() { return Status::Unavailable("built without CUDA kernels; run with --dry-run"); }
#endif

}  // namespace

Status RunAttentionCase(const SuiteOptions& o, const AttnCaseSpec& s, MeasurementSink* sink) {
  if (o.dry_run) return RunAttentionCaseCpu(o, s, sink);
#ifdef CAPPLAN_HAVE_CUDA
  return RunAttentionCaseGpu(o, s, sink);
#else
  return NoCuda();
#endif
}

Status RunAppendCase(const SuiteOptions& o, const AttnCaseSpec& s, MeasurementSink* sink) {
  if (o.dry_run) return RunAppendCaseCpu(o, s, sink);
#ifdef CAPPLAN_HAVE_CUDA
  return RunAppendCaseGpu(o, s, sink);
#else
  return NoCuda();
#endif
}

Status RunVerifyCase(const SuiteOptions& o, const AttnCaseSpec& s, MeasurementSink* sink) {
  if (o.dry_run) return RunVerifyCaseCpu(o, s, sink);
#ifdef CAPPLAN_HAVE_CUDA
  return RunVerifyCaseGpu(o, s, sink);
#else
  return NoCuda();
#endif
}

Status RunElementwiseCase(const SuiteOptions& o, const ElementwiseCaseSpec& s,
                          MeasurementSink* sink) {
  if (o.dry_run) return RunElementwiseCaseCpu(o, s, sink);
#ifdef CAPPLAN_HAVE_CUDA
  return RunElementwiseCaseGpu(o, s, sink);
#else
  return NoCuda();
#endif
}

}  // namespace capplan::kernels
