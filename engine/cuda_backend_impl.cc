// The CUDA backend's shared pieces (cuda_backend_impl.h): per-op marks,
// scratch sizing, and the GEMM and attention launches every op uses.
#include "engine/cuda_backend_impl.h"

#include <algorithm>

namespace capplan::engine {

using cuda::B;
using cuda::Cuda;
using cuda::Ensure;
using kernels::DeviceBuffer;
using kernels::GemmWeightFormat;

CudaBackend::Impl::~Impl() {
  if (ev_start) cudaEventDestroy(ev_start);
  if (ev_stop) cudaEventDestroy(ev_stop);
  for (cudaEvent_t e : mark_events) cudaEventDestroy(e);
}

void CudaBackend::Impl::Mark(const models::ProgramOp& op) {
  if (marks == mark_events.size()) {
    cudaEvent_t e = nullptr;
    if (cudaEventCreate(&e) != cudaSuccess) return;  // the split is lost, not the step
    mark_events.push_back(e);
    mark_op.push_back(&op);
  }
  mark_op[marks] = &op;
  if (cudaEventRecord(mark_events[marks], nullptr) == cudaSuccess) ++marks;
}

StepOpTimes CudaBackend::Impl::SplitMarks() const {
  StepOpTimes t;
  t.host_us = host_us;
  for (size_t i = 0; i < marks; ++i) {
    float ms = 0;
    const cudaEvent_t end = i + 1 < marks ? mark_events[i + 1] : ev_stop;
    if (cudaEventElapsedTime(&ms, mark_events[i], end) != cudaSuccess) return StepOpTimes{};
    t.Add(*mark_op[i], 1000.0 * ms);
  }
  t.valid = marks > 0;
  return t;
}

Status CudaBackend::Impl::EnsureScratch(int64_t n64) {
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

Status CudaBackend::Impl::Linear(const DevLinear& w, const uint16_t* x, int m, uint16_t* y) {
  if (m == 0) return Status::Ok();
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

kernels::AttentionPlan CudaBackend::Impl::Plan(const kernels::AttentionProblem& p, int max_ctx) {
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

Status CudaBackend::Impl::Attend(const kernels::AttentionProblem& p,
                                 const kernels::AttentionRows& r, const uint16_t* qin,
                                 const kernels::PagedKvDevice& cache, int max_ctx, uint16_t* out) {
  // A DSA row walks its top-k list, not its context (suite_cases_gpu.cc
  // plans the same way).
  const kernels::AttentionPlan plan = Plan(p, p.topk > 0 ? p.topk : max_ctx);
  if (plan.workspace_bytes > 0) CAPPLAN_RETURN_IF_ERROR(Ensure(&attn_ws, plan.workspace_bytes));
  return kernels::LaunchPagedAttention(p, r, B(qin), cache, plan,
                                       plan.workspace_bytes > 0 ? attn_ws.get() : nullptr, B(out));
}
}  // namespace capplan::engine
