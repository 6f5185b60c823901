// The CUDA backend (see cuda_backend.h). Host code only: every device step
// is a launch wrapper of kernels/ or engine/cuda_glue.h, in the order the CPU
// backend computes the same step (cpu_backend.cc, cpu_attention.cc), so the
// two can be read side by side.
#include "engine/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/cpu_backend.h"
#include "engine/cuda_glue.h"
#include "engine/device_verifying_tracker.h"
#include "engine/slice_math.h"
#include "kernels/attention/attention_cuda.h"
#include "kernels/formats/bf16.h"
#include "kernels/gemm/device_weights.h"
#include "kernels/harness/cuda_timer.h"
#include "kernels/moe/moe_cuda.h"
#include "kernels/moe/moe_permute.h"
#include "kernels/moe/moe_router.h"

namespace capplan::engine {

namespace {

using kernels::Bf16;
using kernels::DeviceBuffer;
using kernels::DeviceWeightSet;
using kernels::GemmWeightFormat;

// FP8 KV per-tensor scale. The slice has no calibration data and engines
// default uncalibrated k_scale / v_scale to 1.0 (vLLM's
// docs/features/quantization/quantized_kvcache.md). RMS-normalised synthetic
// activations are O(1), well inside e4m3's range at scale 1.
constexpr float kFp8KvScale = 1.0f;

Status Cuda(cudaError_t e, const char* what) {
  return e == cudaSuccess ? Status::Ok()
                          : Status::Internal(std::string(what) + ": " + cudaGetErrorString(e));
}

// The DSA indexer's score scratch: 64M floats (256 MB) at most, sliced by
// rows beyond that.
constexpr int64_t kMaxIndexScoreFloats = int64_t{64} << 20;

// Grow-only scratch: reallocates only when a step needs more than any
// before (Create pre-sizes the per-token buffers, so steps do not allocate).
template <typename T>
Status Ensure(DeviceBuffer<T>* b, size_t n) {
  if (b->size() >= n) return Status::Ok();
  return b->Allocate(std::max<size_t>(n, 1));
}

template <typename T>
Status Put(DeviceBuffer<T>* b, const std::vector<T>& v) {
  CAPPLAN_RETURN_IF_ERROR(Ensure(b, v.size()));
  if (v.empty()) return Status::Ok();
  return Cuda(cudaMemcpy(b->get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice),
              "page-table upload");
}

std::vector<uint16_t> Bf16Bits(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = kernels::FloatToBf16Bits(v[i]);
  return out;
}

Bf16* B(uint16_t* p) { return reinterpret_cast<Bf16*>(p); }
const Bf16* B(const uint16_t* p) { return reinterpret_cast<const Bf16*>(p); }

struct DevLinear {
  DeviceWeightSet set;
  bool present = false;
};

Result<DevLinear> UploadLinear(const kernels::GemmWeights& w) {
  DevLinear d;
  if (w.n == 0) return d;  // absent in this architecture
  CAPPLAN_ASSIGN_OR_RETURN(d.set, kernels::UploadWeightSet({&w}));
  d.present = true;
  return d;
}

struct DevLayer {
  DeviceBuffer<uint16_t> attn_norm, ffn_norm, q_a_norm, kv_a_norm, w_uk, w_uv;
  DevLinear wq, wk, wv, wo, wq_a, wq_b, wkv_a, wi_q, wi_k, wi_w;
  bool moe = false;
  std::unique_ptr<kernels::MoeCuda> ffn;  // MoE, or the dense FFN as one expert
  DeviceBuffer<float> router;             // FP32 [experts, hidden]
  kernels::RouterConfig router_config;
  DeviceBuffer<uint8_t> k, v, index_keys;
  kernels::PagedKvDevice cache, index_cache;
};

}  // namespace

struct CudaBackend::Impl {
  SliceConfig c;
  int32_t num_pages = 0, page_size = 0;
  CudaBackendOptions opt;
  kernels::CudaDeviceInfo info;
  cudaEvent_t ev_start = nullptr, ev_stop = nullptr;
  // Op-class marks of the step being timed (engine/op_times.h): an event
  // where work of a class begins; the pool grows once to the step's count.
  std::vector<cudaEvent_t> mark_events;
  std::vector<models::OpClass> mark_class;
  size_t marks = 0;
  double host_us = 0;
  OpClassTimes op_times;

  DeviceBuffer<uint16_t> embedding, final_norm;
  DevLinear lm_head;
  std::vector<DevLayer> layers;
  DeviceBuffer<kernels::KvPageTag> tags;

  // Per-token scratch (BF16 bits unless noted).
  DeviceBuffer<uint16_t> resid, add, zeros, h, q, k, v, cq, kv, q_att, attn, o_v, iq, ik, iw, last,
      logits;
  DeviceBuffer<uint8_t> act_q;  // FP8 activation codes for block-FP8 linears
  DeviceBuffer<float> act_s;    // their 1x128 scales
  DeviceBuffer<float> router_logits, scores, split_ws;
  DeviceBuffer<uint8_t> attn_ws;
  DeviceBuffer<int32_t> token_ids, token_row, token_pos, row_ctx, sample_rows, topk_idx;
  // Page table of the step.
  DeviceBuffer<int32_t> pt_pages, pt_seq_lens;
  DeviceBuffer<uint32_t> pt_epochs;
  DeviceBuffer<int64_t> pt_requests;
  // Page table of the verification batch, and its output.
  DeviceBuffer<int32_t> vpt_pages, vpt_seq_lens;
  DeviceBuffer<uint32_t> vpt_epochs;
  DeviceBuffer<int64_t> vpt_requests;
  DeviceBuffer<kernels::IntegrityMismatch> mismatches;
  DeviceBuffer<int> mismatch_count;

  ~Impl() {
    if (ev_start) cudaEventDestroy(ev_start);
    if (ev_stop) cudaEventDestroy(ev_stop);
    for (cudaEvent_t e : mark_events) cudaEventDestroy(e);
  }

  void Mark(models::OpClass cls) {
    if (marks > 0 && mark_class[marks - 1] == cls) return;
    if (marks == mark_events.size()) {
      cudaEvent_t e = nullptr;
      if (cudaEventCreate(&e) != cudaSuccess) return;  // the split is lost, not the step
      mark_events.push_back(e);
      mark_class.push_back(cls);
    }
    mark_class[marks] = cls;
    if (cudaEventRecord(mark_events[marks], nullptr) == cudaSuccess) ++marks;
  }

  // After ev_stop completed: the segments between marks, by class.
  OpClassTimes SplitMarks() const {
    OpClassTimes t;
    t.host_us = host_us;
    for (size_t i = 0; i < marks; ++i) {
      float ms = 0;
      const cudaEvent_t end = i + 1 < marks ? mark_events[i + 1] : ev_stop;
      if (cudaEventElapsedTime(&ms, mark_events[i], end) != cudaSuccess) return OpClassTimes{};
      t.us[static_cast<int>(mark_class[i])] += 1000.0 * ms;
    }
    t.valid = marks > 0;
    return t;
  }

  int QkWidth() const { return c.qk_nope + c.qk_rope; }

  Status EnsureScratch(int64_t n64) {
    const size_t n = static_cast<size_t>(std::max<int64_t>(n64, 1));
    const size_t H = c.hidden;
    const bool mla = c.attention != models::AttentionKind::kGqa;
    const size_t q_w = mla ? static_cast<size_t>(c.q_heads) * QkWidth()
                           : static_cast<size_t>(c.q_heads) * c.head_dim;
    const size_t kv_w =
        mla ? c.kv_lora_rank + c.qk_rope : static_cast<size_t>(c.kv_heads) * c.head_dim;
    const size_t att_w = mla ? static_cast<size_t>(c.q_heads) * c.kv_lora_rank
                             : static_cast<size_t>(c.q_heads) * c.head_dim;
    const size_t max_k = std::max({H, static_cast<size_t>(c.q_lora_rank), att_w,
                                   static_cast<size_t>(c.q_heads) * std::max(c.v_head_dim, 1)});
    const size_t zeros_before = zeros.size();
    for (DeviceBuffer<uint16_t>* b : {&resid, &add, &zeros, &h}) {
      CAPPLAN_RETURN_IF_ERROR(Ensure(b, n * std::max<size_t>(H, c.q_lora_rank)));
    }
    CAPPLAN_RETURN_IF_ERROR(Ensure(&q, n * q_w));
    CAPPLAN_RETURN_IF_ERROR(Ensure(&k, n * kv_w));
    CAPPLAN_RETURN_IF_ERROR(Ensure(&v, n * kv_w));
    CAPPLAN_RETURN_IF_ERROR(Ensure(&cq, n * std::max(c.q_lora_rank, 1)));
    CAPPLAN_RETURN_IF_ERROR(Ensure(&kv, n * kv_w));
    CAPPLAN_RETURN_IF_ERROR(
        Ensure(&q_att, n * c.q_heads * static_cast<size_t>(c.kv_lora_rank + c.qk_rope)));
    CAPPLAN_RETURN_IF_ERROR(Ensure(&attn, n * att_w));
    CAPPLAN_RETURN_IF_ERROR(
        Ensure(&o_v, n * c.q_heads * static_cast<size_t>(std::max(c.v_head_dim, 1))));
    CAPPLAN_RETURN_IF_ERROR(Ensure(&iq, n * std::max(c.index_heads * c.index_head_dim, 1)));
    CAPPLAN_RETURN_IF_ERROR(Ensure(&ik, n * std::max(c.index_head_dim, 1)));
    CAPPLAN_RETURN_IF_ERROR(Ensure(&iw, n * std::max(c.index_heads, 1)));
    CAPPLAN_RETURN_IF_ERROR(Ensure(&act_q, n * max_k));
    CAPPLAN_RETURN_IF_ERROR(Ensure(&act_s, n * ((max_k + 127) / 128)));
    CAPPLAN_RETURN_IF_ERROR(Ensure(&router_logits, n * std::max(c.n_experts, 1)));
    for (DeviceBuffer<int32_t>* b : {&token_ids, &token_row, &token_pos, &row_ctx, &sample_rows}) {
      CAPPLAN_RETURN_IF_ERROR(Ensure(b, n));
    }
    CAPPLAN_RETURN_IF_ERROR(Ensure(&topk_idx, n * std::max(c.index_topk, 1)));
    // The zero addend of the first layer's fused add; only ever read.
    if (zeros.size() == zeros_before) return Status::Ok();
    return Cuda(cudaMemset(zeros.get(), 0, zeros.size() * sizeof(uint16_t)), "zero scratch");
  }

  // y [m, w.n] = x [m, w.k] * W^T, BF16 out. Block-FP8 weights take FP8
  // activations in 1x128 groups, as GemmCpu's reference does.
  Status Linear(const DevLinear& w, const uint16_t* x, int m, uint16_t* y) {
    if (m == 0) return Status::Ok();
    Mark(models::OpClass::kDenseGemm);
    kernels::GroupedGemmArgs a;
    w.set.Bind(&a);
    a.num_groups = 1;
    a.m = m;
    a.max_rows_per_group = m;
    if (w.set.format == GemmWeightFormat::kFp8Block128) {
      CAPPLAN_RETURN_IF_ERROR(
          kernels::LaunchQuantFp8Rowwise128(x, m, w.set.k, act_q.get(), act_s.get()));
      a.x_fp8 = act_q.get();
      a.x_scales = act_s.get();
    } else {
      a.x_bf16 = x;
    }
    a.y = y;
    if (!opt.batch_invariant) {
      a.split_k = kernels::ChooseSplitK(m, w.set.n, w.set.k, info.sm_count);
      if (a.split_k > 1) {
        CAPPLAN_RETURN_IF_ERROR(Ensure(&split_ws, static_cast<size_t>(a.split_k) * m * w.set.n));
        a.workspace = split_ws.get();
      }
    }
    return kernels::LaunchGroupedGemm(a);
  }

  kernels::AttentionPlan Plan(const kernels::AttentionProblem& p, int max_ctx) {
    if (!opt.batch_invariant) return kernels::PlanPagedAttention(p, max_ctx, info.sm_count);
    // One split: every row is reduced by one CTA in token order whatever
    // else is in the batch.
    kernels::AttentionPlan plan;
    plan.num_splits = 1;
    plan.split_tokens = (std::max(max_ctx, 1) + 15) / 16 * 16;
    plan.head_tiles = (p.group() + 15) / 16;
    plan.workspace_bytes = 0;
    return plan;
  }

  Status Attend(const kernels::AttentionProblem& p, const kernels::AttentionRows& r,
                const uint16_t* qin, const kernels::PagedKvDevice& cache, int max_ctx,
                uint16_t* out) {
    // A DSA row walks its top-k list, not its context (suite_cases_gpu.cc
    // plans the same way).
    Mark(models::OpClass::kAttention);
    const kernels::AttentionPlan plan = Plan(p, p.topk > 0 ? p.topk : max_ctx);
    if (plan.workspace_bytes > 0) CAPPLAN_RETURN_IF_ERROR(Ensure(&attn_ws, plan.workspace_bytes));
    return kernels::LaunchPagedAttention(
        p, r, B(qin), cache, plan, plan.workspace_bytes > 0 ? attn_ws.get() : nullptr, B(out));
  }
};

CudaBackend::CudaBackend(std::unique_ptr<Impl> impl, int32_t page_size)
    : impl_(std::move(impl)), page_size_(page_size) {}
CudaBackend::~CudaBackend() = default;

Result<std::unique_ptr<CudaBackend>> CudaBackend::Create(const SliceConfig& c, int32_t num_pages,
                                                         int32_t page_size,
                                                         const CudaBackendOptions& options) {
  std::string why = kernels::CudaDeviceUnavailableReason();
  if (!why.empty()) {
    const std::string prefix = "no CUDA device: ";
    if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
    return Status::Unavailable("no CUDA device: use --backend cpu (" + why + ")");
  }
  auto m = std::make_unique<Impl>();
  m->c = c;
  m->num_pages = num_pages;
  m->page_size = page_size;
  m->opt = options;
  CAPPLAN_ASSIGN_OR_RETURN(m->info, kernels::GetCudaDeviceInfo());
  CAPPLAN_RETURN_IF_ERROR(Cuda(cudaEventCreate(&m->ev_start), "cudaEventCreate"));
  CAPPLAN_RETURN_IF_ERROR(Cuda(cudaEventCreate(&m->ev_stop), "cudaEventCreate"));
  CAPPLAN_ASSIGN_OR_RETURN(SliceWeights w, MakeSliceWeights(c));
  const int max_tokens = static_cast<int>(std::max<int64_t>(options.max_step_tokens, 1));

  CAPPLAN_RETURN_IF_ERROR(m->embedding.Upload(Bf16Bits(w.embedding)));
  CAPPLAN_RETURN_IF_ERROR(m->final_norm.Upload(Bf16Bits(w.final_norm)));
  CAPPLAN_ASSIGN_OR_RETURN(m->lm_head, UploadLinear(w.lm_head));
  // Tags start unowned (they match no request), as the host side array.
  CAPPLAN_RETURN_IF_ERROR(m->tags.Upload(std::vector<kernels::KvPageTag>(
      num_pages, kernels::KvPageTag{kernels::kKvNoRequest, -1, 0})));

  const bool mla = c.attention != models::AttentionKind::kGqa;
  const kernels::KvDtype kvd =
      c.kv_dtype == models::Dtype::kFp8E4m3 ? kernels::KvDtype::kFp8 : kernels::KvDtype::kBf16;
  for (int l = 0; l < c.layers; ++l) {
    SliceLayerWeights& L = w.layers[l];
    DevLayer d;
    // Layers run one after another on one stream: one set of FFN
    // intermediates serves them all.
    const kernels::MoeCuda* scratch_donor = l > 0 ? m->layers[0].ffn.get() : nullptr;
    CAPPLAN_RETURN_IF_ERROR(d.attn_norm.Upload(Bf16Bits(L.attn_norm)));
    CAPPLAN_RETURN_IF_ERROR(d.ffn_norm.Upload(Bf16Bits(L.ffn_norm)));
    CAPPLAN_RETURN_IF_ERROR(d.q_a_norm.Upload(Bf16Bits(L.q_a_norm)));
    CAPPLAN_RETURN_IF_ERROR(d.kv_a_norm.Upload(Bf16Bits(L.kv_a_norm)));
    CAPPLAN_RETURN_IF_ERROR(d.w_uk.Upload(Bf16Bits(L.w_uk)));
    CAPPLAN_RETURN_IF_ERROR(d.w_uv.Upload(Bf16Bits(L.w_uv)));
    CAPPLAN_ASSIGN_OR_RETURN(d.wq, UploadLinear(L.wq));
    CAPPLAN_ASSIGN_OR_RETURN(d.wk, UploadLinear(L.wk));
    CAPPLAN_ASSIGN_OR_RETURN(d.wv, UploadLinear(L.wv));
    CAPPLAN_ASSIGN_OR_RETURN(d.wo, UploadLinear(L.wo));
    CAPPLAN_ASSIGN_OR_RETURN(d.wq_a, UploadLinear(L.wq_a));
    CAPPLAN_ASSIGN_OR_RETURN(d.wq_b, UploadLinear(L.wq_b));
    CAPPLAN_ASSIGN_OR_RETURN(d.wkv_a, UploadLinear(L.wkv_a));
    CAPPLAN_ASSIGN_OR_RETURN(d.wi_q, UploadLinear(L.wi_q));
    CAPPLAN_ASSIGN_OR_RETURN(d.wi_k, UploadLinear(L.wi_k));
    CAPPLAN_ASSIGN_OR_RETURN(d.wi_w, UploadLinear(L.wi_w));
    d.moe = L.moe;
    if (L.moe) {
      CAPPLAN_ASSIGN_OR_RETURN(
          d.ffn, kernels::MoeCuda::Create(L.experts, max_tokens, c.top_k, scratch_donor));
      CAPPLAN_RETURN_IF_ERROR(d.router.Upload(L.experts.router));
      d.router_config = L.router;
    } else {
      kernels::MoeWeights one;
      one.hidden = c.hidden;
      one.intermediate = c.dense_intermediate;
      one.experts.push_back(L.dense);
      CAPPLAN_ASSIGN_OR_RETURN(d.ffn, kernels::MoeCuda::Create(one, max_tokens, 1, scratch_donor));
    }
    L = SliceLayerWeights();  // host copies are no longer needed
    // KV cache of the layer; 0xff everywhere is NaN in BF16 and e4m3, so the
    // poison page (and any never-written slot) poisons whatever reads it.
    kernels::PagedKvLayout lay;
    lay.num_pages = num_pages;
    lay.page_size = page_size;
    lay.dtype = kvd;
    if (mla) {
      lay.kv_heads = 1;
      lay.k_dim = c.kv_lora_rank + c.qk_rope;
      lay.v_dim = 0;
    } else {
      lay.kv_heads = c.kv_heads;
      lay.k_dim = c.head_dim;
      lay.v_dim = c.head_dim;
    }
    const size_t eb = kernels::KvElemBytes(kvd);
    CAPPLAN_RETURN_IF_ERROR(d.k.Allocate(lay.KElems() * eb));
    CAPPLAN_RETURN_IF_ERROR(d.k.Poison());
    if (lay.v_dim > 0) {
      CAPPLAN_RETURN_IF_ERROR(d.v.Allocate(lay.VElems() * eb));
      CAPPLAN_RETURN_IF_ERROR(d.v.Poison());
    }
    d.cache =
        kernels::PagedKvDevice{lay,           d.k.get(),   lay.v_dim > 0 ? d.v.get() : nullptr,
                               m->tags.get(), kFp8KvScale, kFp8KvScale};
    if (mla && c.IndexFresh(l)) {
      // The DSA indexer's key: one more paged array with the KV cache's
      // dtype (the CPU backend stores it beside the latent, same rounding).
      kernels::PagedKvLayout il = lay;
      il.k_dim = c.index_head_dim;
      il.v_dim = 0;
      CAPPLAN_RETURN_IF_ERROR(d.index_keys.Allocate(il.KElems() * eb));
      CAPPLAN_RETURN_IF_ERROR(d.index_keys.Poison());
      d.index_cache = kernels::PagedKvDevice{
          il, d.index_keys.get(), nullptr, m->tags.get(), kFp8KvScale, kFp8KvScale};
    }
    m->layers.push_back(std::move(d));
  }
  CAPPLAN_RETURN_IF_ERROR(m->EnsureScratch(max_tokens));
  CAPPLAN_RETURN_IF_ERROR(Cuda(cudaDeviceSynchronize(), "CudaBackend::Create"));
  return std::unique_ptr<CudaBackend>(new CudaBackend(std::move(m), page_size));
}

Status CudaBackend::Forward(const std::vector<StepRequest>& batch, PageTags* tags,
                            std::vector<int32_t>* next_tokens) {
  Impl& m = *impl_;
  const SliceConfig& c = m.c;
  const int H = c.hidden;
  m.marks = 0;
  m.host_us = 0;
  m.op_times = {};
  const auto host_t0 = std::chrono::steady_clock::now();
  // Host plan of the step: rows (request-major, as the CPU backend), the
  // page table, the sampled rows.
  std::vector<int32_t> token_ids, token_row, token_pos, row_ctx, sample_rows;
  std::vector<size_t> which;
  int max_pages = 1;
  for (const StepRequest& r : batch) {
    if (r.pages == nullptr || static_cast<int64_t>(r.pages->size()) * page_size_ <
                                  r.start_position + static_cast<int64_t>(r.tokens.size())) {
      return Status::Internal("CUDA backend: request " + std::to_string(r.request) +
                              " has no pages for its new tokens");
    }
    max_pages = std::max(max_pages, static_cast<int>(r.pages->size()));
  }
  const int nb = static_cast<int>(batch.size());
  std::vector<int32_t> pages(static_cast<size_t>(nb) * max_pages, kernels::kKvPoisonPage);
  std::vector<uint32_t> epochs(pages.size(), 0);
  std::vector<int64_t> requests(nb);
  std::vector<int32_t> seq_lens(nb);
  for (int i = 0; i < nb; ++i) {
    const StepRequest& r = batch[i];
    requests[i] = r.request;
    seq_lens[i] = static_cast<int32_t>(r.start_position + r.tokens.size());
    for (size_t j = 0; j < r.pages->size(); ++j) {
      pages[static_cast<size_t>(i) * max_pages + j] = (*r.pages)[j].physical;
      epochs[static_cast<size_t>(i) * max_pages + j] = (*r.pages)[j].epoch;
    }
    for (size_t t = 0; t < r.tokens.size(); ++t) {
      const int64_t pos = r.start_position + static_cast<int64_t>(t);
      if (r.tokens[t] < 0 || r.tokens[t] >= c.vocab) {
        return Status::Internal("CUDA backend: bad token id");
      }
      token_ids.push_back(r.tokens[t]);
      token_row.push_back(i);
      token_pos.push_back(static_cast<int32_t>(pos));
      row_ctx.push_back(static_cast<int32_t>(pos + 1));
      // The host mirror of the append kernel's stamp (the verifying
      // tracker's pre-write check reads it).
      StampPage(tags, r.request, static_cast<int32_t>(pos / page_size_),
                (*r.pages)[pos / page_size_]);
    }
    if (r.want_token && !r.tokens.empty()) {
      sample_rows.push_back(static_cast<int32_t>(token_ids.size()) - 1);
      which.push_back(i);
    }
  }
  const int n = static_cast<int>(token_ids.size());
  next_tokens->assign(batch.size(), -1);
  logits_.clear();
  if (n == 0) return Status::Ok();
  const int max_ctx = *std::max_element(row_ctx.begin(), row_ctx.end());
  CAPPLAN_RETURN_IF_ERROR(m.EnsureScratch(n));
  CAPPLAN_RETURN_IF_ERROR(Put(&m.token_ids, token_ids));
  CAPPLAN_RETURN_IF_ERROR(Put(&m.token_row, token_row));
  CAPPLAN_RETURN_IF_ERROR(Put(&m.token_pos, token_pos));
  CAPPLAN_RETURN_IF_ERROR(Put(&m.row_ctx, row_ctx));
  CAPPLAN_RETURN_IF_ERROR(Put(&m.sample_rows, sample_rows));
  CAPPLAN_RETURN_IF_ERROR(Put(&m.pt_pages, pages));
  CAPPLAN_RETURN_IF_ERROR(Put(&m.pt_epochs, epochs));
  CAPPLAN_RETURN_IF_ERROR(Put(&m.pt_requests, requests));
  CAPPLAN_RETURN_IF_ERROR(Put(&m.pt_seq_lens, seq_lens));
  const kernels::PageTableDevice ptd{
      nb, max_pages, m.pt_pages.get(), m.pt_epochs.get(), m.pt_requests.get(), m.pt_seq_lens.get()};
  kernels::AttentionRows rows;
  rows.row_seq = m.token_row.get();
  rows.row_ctx = m.row_ctx.get();
  rows.page_table = m.pt_pages.get();
  const float eps = slice_math::kRmsEps;
  const float theta = static_cast<float>(slice_math::kRopeTheta);
  // Building and uploading the step's page table and rows is host work.
  m.host_us +=
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - host_t0).count();

  m.Mark(models::OpClass::kElementwise);
  CAPPLAN_RETURN_IF_ERROR(
      kernels::LaunchGatherRows(m.embedding.get(), m.token_ids.get(), n, H, m.resid.get()));
  std::vector<uint16_t> host_r, host_a;
  std::vector<float> probe_rows;
  for (int l = 0; l < c.layers; ++l) {
    DevLayer& L = m.layers[l];
    // Residual stream: resid holds x; `add` the previous sublayer's output
    // (zeros before the first layer). x = bf16(x + add); h = RMSNorm(x).
    m.Mark(models::OpClass::kElementwise);
    CAPPLAN_RETURN_IF_ERROR(
        kernels::LaunchFusedAddRmsNorm(n, H, eps, B(l == 0 ? m.zeros.get() : m.add.get()),
                                       B(m.resid.get()), B(L.attn_norm.get()), B(m.h.get())));
    if (c.attention == models::AttentionKind::kGqa) {
      const int hd = c.head_dim;
      CAPPLAN_RETURN_IF_ERROR(m.Linear(L.wq, m.h.get(), n, m.q.get()));
      CAPPLAN_RETURN_IF_ERROR(m.Linear(L.wk, m.h.get(), n, m.k.get()));
      CAPPLAN_RETURN_IF_ERROR(m.Linear(L.wv, m.h.get(), n, m.v.get()));
      m.Mark(models::OpClass::kElementwise);
      CAPPLAN_RETURN_IF_ERROR(
          kernels::LaunchRope(n, c.kv_heads, hd, 0, hd, theta, m.token_pos.get(), B(m.k.get())));
      m.Mark(models::OpClass::kElementwise);
      CAPPLAN_RETURN_IF_ERROR(
          kernels::LaunchRope(n, c.q_heads, hd, 0, hd, theta, m.token_pos.get(), B(m.q.get())));
      m.Mark(models::OpClass::kAttention);
      CAPPLAN_RETURN_IF_ERROR(kernels::LaunchAppendKv(n, B(m.k.get()), B(m.v.get()),
                                                      m.token_row.get(), m.token_pos.get(), ptd,
                                                      L.cache, nullptr));
      kernels::AttentionProblem p;
      p.rows = n;
      p.q_heads = c.q_heads;
      p.kv_heads = c.kv_heads;
      p.k_dim = hd;
      p.v_dim = hd;
      p.sm_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
      p.k_scale = L.cache.k_scale;
      p.v_scale = L.cache.v_scale;
      p.page_size = page_size_;
      p.max_pages = max_pages;
      p.kv_dtype = L.cache.layout.dtype;
      CAPPLAN_RETURN_IF_ERROR(m.Attend(p, rows, m.q.get(), L.cache, max_ctx, m.attn.get()));
      CAPPLAN_RETURN_IF_ERROR(m.Linear(L.wo, m.attn.get(), n, m.add.get()));
    } else {
      const int lora = c.kv_lora_rank, rope = c.qk_rope, nope = c.qk_nope, qk = nope + rope;
      const bool dsa = c.index_topk > 0;
      // IndexShare: only fresh layers run the indexer; the others reuse the
      // top-k list still in topk_idx from the last fresh layer of this step
      // (layer 0 is always fresh).
      const bool fresh = c.IndexFresh(l);
      if (c.q_lora_rank > 0) {
        CAPPLAN_RETURN_IF_ERROR(m.Linear(L.wq_a, m.h.get(), n, m.cq.get()));
        m.Mark(models::OpClass::kElementwise);
        CAPPLAN_RETURN_IF_ERROR(cuda::LaunchRmsNormRows(n, c.q_lora_rank, m.cq.get(), c.q_lora_rank,
                                                        L.q_a_norm.get(), eps, m.cq.get(),
                                                        c.q_lora_rank, nullptr));
        CAPPLAN_RETURN_IF_ERROR(m.Linear(L.wq_b, m.cq.get(), n, m.q.get()));
      } else {
        CAPPLAN_RETURN_IF_ERROR(m.Linear(L.wq, m.h.get(), n, m.q.get()));
      }
      CAPPLAN_RETURN_IF_ERROR(m.Linear(L.wkv_a, m.h.get(), n, m.kv.get()));
      m.Mark(models::OpClass::kElementwise);
      CAPPLAN_RETURN_IF_ERROR(cuda::LaunchRmsNormRows(n, lora, m.kv.get(), lora + rope,
                                                      L.kv_a_norm.get(), eps, m.kv.get(),
                                                      lora + rope, nullptr));
      m.Mark(models::OpClass::kElementwise);
      CAPPLAN_RETURN_IF_ERROR(kernels::LaunchRope(n, 1, lora + rope, lora, rope, theta,
                                                  m.token_pos.get(), B(m.kv.get())));
      m.Mark(models::OpClass::kElementwise);
      CAPPLAN_RETURN_IF_ERROR(kernels::LaunchRope(n, c.q_heads, qk, nope, rope, theta,
                                                  m.token_pos.get(), B(m.q.get())));
      m.Mark(models::OpClass::kAttention);
      CAPPLAN_RETURN_IF_ERROR(kernels::LaunchAppendKv(n, B(m.kv.get()), nullptr, m.token_row.get(),
                                                      m.token_pos.get(), ptd, L.cache, nullptr));
      if (fresh) {
        CAPPLAN_RETURN_IF_ERROR(m.Linear(L.wi_q, m.h.get(), n, m.iq.get()));
        CAPPLAN_RETURN_IF_ERROR(m.Linear(L.wi_k, m.h.get(), n, m.ik.get()));
        CAPPLAN_RETURN_IF_ERROR(m.Linear(L.wi_w, m.h.get(), n, m.iw.get()));
        m.Mark(models::OpClass::kAttention);
        CAPPLAN_RETURN_IF_ERROR(kernels::LaunchAppendKv(n, B(m.ik.get()), nullptr,
                                                        m.token_row.get(), m.token_pos.get(), ptd,
                                                        L.index_cache, nullptr));
      }
      m.Mark(models::OpClass::kAttention);
      CAPPLAN_RETURN_IF_ERROR(cuda::LaunchMlaAbsorbQ(n, c.q_heads, nope, rope, lora, m.q.get(),
                                                     L.w_uk.get(), m.q_att.get(), nullptr));
      kernels::AttentionProblem p;
      p.rows = n;
      p.q_heads = c.q_heads;
      p.kv_heads = 1;
      p.k_dim = lora + rope;
      p.v_dim = lora;
      p.v_from_k = true;
      p.sm_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(qk)));
      p.k_scale = L.cache.k_scale;
      p.v_scale = L.cache.k_scale;  // V is the latent part of the K row
      p.page_size = page_size_;
      p.max_pages = max_pages;
      p.kv_dtype = L.cache.layout.dtype;
      kernels::AttentionRows r = rows;
      if (fresh) {
        m.Mark(models::OpClass::kAttention);  // the DSA indexer
        // Scores for a slice of rows at a time: n x max_ctx floats would be
        // GBs for a long prefill chunk at 128K tokens of context.
        const int slice = static_cast<int>(
            std::clamp<int64_t>(kMaxIndexScoreFloats / std::max(max_ctx, 1), 1, std::max(n, 1)));
        CAPPLAN_RETURN_IF_ERROR(Ensure(&m.scores, static_cast<size_t>(slice) * max_ctx));
        cuda::IndexKeyCache ikc;
        ikc.keys = L.index_cache.k;
        ikc.fp8 = L.index_cache.layout.dtype == kernels::KvDtype::kFp8;
        ikc.scale = L.index_cache.k_scale;
        ikc.page_size = page_size_;
        ikc.dim = c.index_head_dim;
        const size_t q_row = static_cast<size_t>(c.index_heads) * c.index_head_dim;
        for (int r0 = 0; r0 < n; r0 += slice) {
          const int nr = std::min(slice, n - r0);
          CAPPLAN_RETURN_IF_ERROR(cuda::LaunchIndexScores(
              nr, c.index_heads, m.iq.get() + r0 * q_row,
              m.iw.get() + static_cast<size_t>(r0) * c.index_heads, m.token_row.get() + r0,
              m.row_ctx.get() + r0, m.pt_pages.get(), max_pages, ikc, max_ctx, m.scores.get(),
              nullptr));
          CAPPLAN_RETURN_IF_ERROR(cuda::LaunchTopkSelect(
              nr, max_ctx, m.scores.get(), m.row_ctx.get() + r0, c.index_topk,
              m.topk_idx.get() + static_cast<size_t>(r0) * c.index_topk, nullptr));
        }
      }
      if (dsa) {
        p.topk = c.index_topk;
        r.topk_idx = m.topk_idx.get();
      }
      CAPPLAN_RETURN_IF_ERROR(m.Attend(p, r, m.q_att.get(), L.cache, max_ctx, m.attn.get()));
      m.Mark(models::OpClass::kAttention);
      CAPPLAN_RETURN_IF_ERROR(cuda::LaunchMlaUpV(n, c.q_heads, lora, c.v_head_dim, m.attn.get(),
                                                 L.w_uv.get(), m.o_v.get(), nullptr));
      CAPPLAN_RETURN_IF_ERROR(m.Linear(L.wo, m.o_v.get(), n, m.add.get()));
    }
    m.Mark(models::OpClass::kElementwise);
    CAPPLAN_RETURN_IF_ERROR(kernels::LaunchFusedAddRmsNorm(
        n, H, eps, B(m.add.get()), B(m.resid.get()), B(L.ffn_norm.get()), B(m.h.get())));
    // FFN: routing is planned on the host (MoeCuda's plan/run split).
    kernels::MoePermutation perm;
    std::vector<float> route_w;
    if (L.moe) {
      const int E = c.n_experts;
      m.Mark(models::OpClass::kMoe);
      CAPPLAN_RETURN_IF_ERROR(cuda::LaunchRouterLogits(n, E, H, m.h.get(), L.router.get(),
                                                       m.router_logits.get(), nullptr));
      HostSpan host(&m.host_us);  // routing on the host: download, RouteCpu, permutation
      std::vector<float> logits(static_cast<size_t>(n) * E);
      CAPPLAN_RETURN_IF_ERROR(
          Cuda(cudaMemcpy(logits.data(), m.router_logits.get(), logits.size() * sizeof(float),
                          cudaMemcpyDeviceToHost),
               "router logits download"));
      std::vector<int> ids(static_cast<size_t>(n) * c.top_k);
      route_w.resize(ids.size());
      CAPPLAN_RETURN_IF_ERROR(
          kernels::RouteCpu(L.router_config, logits.data(), n, ids.data(), route_w.data()));
      CAPPLAN_ASSIGN_OR_RETURN(perm, kernels::PermuteByExpert(ids.data(), n, c.top_k, E));
    } else {
      perm.tokens = n;
      perm.top_k = 1;
      perm.num_experts = 1;
      perm.expert_offsets = {0, n};
      perm.row_token.resize(n);
      std::iota(perm.row_token.begin(), perm.row_token.end(), 0);
      perm.slot_row = perm.row_token;
      route_w.assign(n, 1.0f);
    }
    m.Mark(L.moe ? models::OpClass::kMoe
                 : models::OpClass::kDenseGemm);  // a dense FFN prices as GEMMs
    {
      HostSpan host(&m.host_us);  // the plan's uploads
      CAPPLAN_RETURN_IF_ERROR(L.ffn->Plan(perm, route_w.data()));
    }
    CAPPLAN_RETURN_IF_ERROR(L.ffn->Run(m.h.get(), m.add.get()));
    if (probe_) {
      // x after the layer = bf16(resid + add), what the next fused add makes.
      CAPPLAN_RETURN_IF_ERROR(m.resid.Download(&host_r));
      CAPPLAN_RETURN_IF_ERROR(m.add.Download(&host_a));
      probe_rows.resize(static_cast<size_t>(n) * H);
      for (size_t i = 0; i < probe_rows.size(); ++i) {
        probe_rows[i] = kernels::RoundToBf16(kernels::Bf16BitsToFloat(host_r[i]) +
                                             kernels::Bf16BitsToFloat(host_a[i]));
      }
      probe_(l, probe_rows, H);
    }
  }
  const int ms = static_cast<int>(sample_rows.size());
  if (ms == 0) return Cuda(cudaGetLastError(), "CUDA backend step");
  m.Mark(models::OpClass::kElementwise);
  CAPPLAN_RETURN_IF_ERROR(kernels::LaunchFusedAddRmsNorm(
      n, H, eps, B(m.add.get()), B(m.resid.get()), B(m.final_norm.get()), B(m.h.get())));
  CAPPLAN_RETURN_IF_ERROR(Ensure(&m.last, static_cast<size_t>(ms) * H));
  m.Mark(models::OpClass::kElementwise);
  CAPPLAN_RETURN_IF_ERROR(
      kernels::LaunchGatherRows(m.h.get(), m.sample_rows.get(), ms, H, m.last.get()));
  CAPPLAN_RETURN_IF_ERROR(Ensure(&m.logits, static_cast<size_t>(ms) * c.vocab));
  CAPPLAN_RETURN_IF_ERROR(m.Linear(m.lm_head, m.last.get(), ms, m.logits.get()));
  m.Mark(models::OpClass::kOverhead);  // sampling: logits download and argmax on the host
  HostSpan host(&m.host_us);
  std::vector<uint16_t> lg(static_cast<size_t>(ms) * c.vocab);
  CAPPLAN_RETURN_IF_ERROR(Cuda(
      cudaMemcpy(lg.data(), m.logits.get(), lg.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost),
      "logits download"));
  for (int j = 0; j < ms; ++j) {
    std::vector<float> row(c.vocab);
    for (int v = 0; v < c.vocab; ++v) {
      row[v] = kernels::Bf16BitsToFloat(lg[static_cast<size_t>(j) * c.vocab + v]);
    }
    int best = 0;
    // NaN (a poison-page read) never compares greater, so it yields token 0.
    for (int v = 1; v < c.vocab; ++v) {
      if (row[v] > row[best]) best = v;
    }
    (*next_tokens)[which[j]] = best;
    logits_.push_back(std::move(row));
  }
  return Status::Ok();
}

void CudaBackend::StartTimer() { (void)cudaEventRecord(impl_->ev_start, nullptr); }

double CudaBackend::StopTimerUs() {
  float ms = 0;
  if (cudaEventRecord(impl_->ev_stop, nullptr) != cudaSuccess ||
      cudaEventSynchronize(impl_->ev_stop) != cudaSuccess ||
      cudaEventElapsedTime(&ms, impl_->ev_start, impl_->ev_stop) != cudaSuccess) {
    impl_->marks = 0;
    return std::numeric_limits<double>::quiet_NaN();  // JSON null: never a made-up time
  }
  // A forward span carries op-class marks; the verification span has none.
  if (impl_->marks > 0) impl_->op_times = impl_->SplitMarks();
  impl_->marks = 0;
  return 1000.0 * ms;
}

OpClassTimes CudaBackend::last_op_times() const { return impl_->op_times; }

Result<std::unique_ptr<IntegrityTracker>> CudaBackend::MakeTracker(const std::string& name,
                                                                   int32_t num_pages) {
  if (name == "verify") {
    return MakeDeviceVerifyingTracker(
        [this](const kernels::PageTable& pt) { return VerifyPages(pt); }, num_pages);
  }
  return MakeIntegrityTracker(name, num_pages);
}

std::string CudaBackend::gpu_name() const { return impl_->info.name; }
std::string CudaBackend::driver_version() const { return impl_->info.driver; }
std::string CudaBackend::cuda_version() const { return impl_->info.runtime; }

Result<std::vector<kernels::IntegrityMismatch>> CudaBackend::VerifyPages(
    const kernels::PageTable& pt) {
  Impl& m = *impl_;
  if (pt.batch == 0) return std::vector<kernels::IntegrityMismatch>{};
  CAPPLAN_RETURN_IF_ERROR(Put(&m.vpt_pages, pt.pages));
  CAPPLAN_RETURN_IF_ERROR(Put(&m.vpt_epochs, pt.epochs));
  CAPPLAN_RETURN_IF_ERROR(Put(&m.vpt_requests, pt.request_ids));
  CAPPLAN_RETURN_IF_ERROR(Put(&m.vpt_seq_lens, pt.seq_lens));
  // Capacity for every entry: no mismatch is ever dropped.
  const int cap = pt.batch * pt.max_pages;
  CAPPLAN_RETURN_IF_ERROR(Ensure(&m.mismatches, cap));
  CAPPLAN_RETURN_IF_ERROR(Ensure(&m.mismatch_count, 1));
  const kernels::PageTableDevice d{pt.batch,           pt.max_pages,         m.vpt_pages.get(),
                                   m.vpt_epochs.get(), m.vpt_requests.get(), m.vpt_seq_lens.get()};
  CAPPLAN_RETURN_IF_ERROR(kernels::LaunchVerifyKvIntegrity(
      d, m.tags.get(), m.num_pages, page_size_, cap, m.mismatches.get(), m.mismatch_count.get()));
  int count = 0;
  CAPPLAN_RETURN_IF_ERROR(
      Cuda(cudaMemcpy(&count, m.mismatch_count.get(), sizeof(int), cudaMemcpyDeviceToHost),
           "verify count download"));
  std::vector<kernels::IntegrityMismatch> out(std::min(count, cap));
  if (!out.empty()) {
    CAPPLAN_RETURN_IF_ERROR(
        Cuda(cudaMemcpy(out.data(), m.mismatches.get(),
                        out.size() * sizeof(kernels::IntegrityMismatch), cudaMemcpyDeviceToHost),
             "verify mismatches download"));
  }
  return out;
}

}  // namespace capplan::engine
