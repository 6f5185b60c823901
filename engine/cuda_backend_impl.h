// The CUDA backend's device state and its op functions, shared by the files
// that implement CudaBackend (internal: include only from engine/cuda_*.cc).
//
//   cuda_backend.cc        Create, the step's host plan, the Forward driver,
//                          timers, the verification batch
//   cuda_backend_setup.cc  weight upload and KV cache allocation per layer
//   cuda_backend_impl.cc   scratch sizing, per-op marks, the shared GEMM and
//                          attention launches
//   cuda_layer_ops.cc      one function per op of the step, in the order the
//                          CPU backend computes them
#ifndef CAPPLAN_ENGINE_CUDA_BACKEND_IMPL_H_
#define CAPPLAN_ENGINE_CUDA_BACKEND_IMPL_H_

#ifdef CAPPLAN_HAVE_CUDA

#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/cpu_backend.h"
#include "engine/cuda_backend.h"
#include "engine/op_times.h"
#include "kernels/attention/attention_cuda.h"
#include "kernels/formats/bf16.h"
#include "kernels/gemm/device_weights.h"
#include "kernels/harness/cuda_timer.h"
#include "kernels/moe/moe_cuda.h"
#include "kernels/moe/moe_router.h"
#include "models/layer_program.h"
#include "models/ops.h"

namespace capplan::engine {

namespace cuda {

// FP8 KV per-tensor scale. The slice has no calibration data and engines
// default uncalibrated k_scale / v_scale to 1.0 (vLLM's
// docs/features/quantization/quantized_kvcache.md). RMS-normalised synthetic
// activations are O(1), well inside e4m3's range at scale 1.
constexpr float kFp8KvScale = 1.0f;

// The DSA indexer's score scratch: 64M floats (256 MB) at most, sliced by
// rows beyond that.
constexpr int64_t kMaxIndexScoreFloats = int64_t{64} << 20;

inline Status Cuda(cudaError_t e, const char* what) {
  return e == cudaSuccess ? Status::Ok()
                          : Status::Internal(std::string(what) + ": " + cudaGetErrorString(e));
}

// Grow-only scratch: reallocates only when a step needs more than any
// before (Create pre-sizes the per-token buffers, so steps do not allocate).
template <typename T>
Status Ensure(kernels::DeviceBuffer<T>* b, size_t n) {
  if (b->size() >= n) return Status::Ok();
  return b->Allocate(std::max<size_t>(n, 1));
}

template <typename T>
Status Put(kernels::DeviceBuffer<T>* b, const std::vector<T>& v) {
  CAPPLAN_RETURN_IF_ERROR(Ensure(b, v.size()));
  if (v.empty()) return Status::Ok();
  return Cuda(cudaMemcpy(b->get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice),
              "page-table upload");
}

inline kernels::Bf16* B(uint16_t* p) { return reinterpret_cast<kernels::Bf16*>(p); }
inline const kernels::Bf16* B(const uint16_t* p) {
  return reinterpret_cast<const kernels::Bf16*>(p);
}

struct DevLinear {
  kernels::DeviceWeightSet set;
  bool present = false;
};

struct DevLayer {
  kernels::DeviceBuffer<uint16_t> attn_norm, ffn_norm, q_a_norm, kv_a_norm, w_uk, w_uv;
  DevLinear wq, wk, wv, wo, wq_a, wq_b, wkv_a, wi_q, wi_k, wi_w;
  bool moe = false;
  std::unique_ptr<kernels::MoeCuda> ffn;  // MoE, or the dense FFN as one expert
  kernels::DeviceBuffer<float> router;    // FP32 [experts, hidden]
  kernels::RouterConfig router_config;
  kernels::DeviceBuffer<uint8_t> k, v, index_keys;
  kernels::PagedKvDevice cache, index_cache;
};

// One Forward's host plan: rows request-major (as the CPU backend), the page
// table, the sampled rows and the request each belongs to.
struct HostStep {
  std::vector<int32_t> token_ids, token_row, token_pos, row_ctx, sample_rows;
  std::vector<size_t> which;
  int max_pages = 1;
  std::vector<int32_t> pages, seq_lens;
  std::vector<uint32_t> epochs;
  std::vector<int64_t> requests;
  models::BatchShape shape;
};

// The FFN's routing, planned on the host (MoeCuda's plan/run split).
struct FfnRoute {
  kernels::MoePermutation perm;
  std::vector<float> weights;
};

// The step as its ops read it: sizes, views of the uploaded plan, and what
// one op hands the next on the host.
struct Step {
  int n = 0;  // token rows
  int max_ctx = 0;
  int max_pages = 1;
  models::BatchShape shape;  // the batch as the program's instantiation sees it
  kernels::PageTableDevice ptd;
  kernels::AttentionRows rows;
  std::vector<size_t> which;  // the request of each sampled row
  // One attention launch serves a layer's decode and prefill rows alike;
  // the layer's second attention op finds it done.
  bool attended = false;
  FfnRoute route;  // moe.gate's routing, for moe.experts
  std::vector<int32_t>* next_tokens = nullptr;
  std::vector<std::vector<float>>* logits = nullptr;
};

}  // namespace cuda

struct CudaBackend::Impl {
  using DevLayer = cuda::DevLayer;
  using DevLinear = cuda::DevLinear;
  using Step = cuda::Step;
  template <typename T>
  using Buf = kernels::DeviceBuffer<T>;

  SliceConfig c;
  int32_t num_pages = 0, page_size = 0;
  CudaBackendOptions opt;
  kernels::CudaDeviceInfo info;
  cudaEvent_t ev_start = nullptr, ev_stop = nullptr;
  // Per-op marks of the step being timed (engine/op_times.h): an event
  // where each program op begins; the pool grows once to the step's count.
  std::vector<cudaEvent_t> mark_events;
  std::vector<const models::ProgramOp*> mark_op;  // ops of the slice's program
  size_t marks = 0;
  double host_us = 0;
  StepOpTimes op_times;

  Buf<uint16_t> embedding, final_norm;
  DevLinear lm_head;
  std::vector<DevLayer> layers;
  Buf<kernels::KvPageTag> tags;

  // Per-token scratch (BF16 bits unless noted).
  Buf<uint16_t> resid, add, zeros, h, q, k, v, cq, kv, q_att, attn, o_v, iq, ik, iw, last, logits;
  Buf<uint8_t> act_q;  // FP8 activation codes for block-FP8 linears
  Buf<float> act_s;    // their 1x128 scales
  Buf<float> router_logits, scores, split_ws;
  Buf<uint8_t> attn_ws;
  Buf<int32_t> token_ids, token_row, token_pos, row_ctx, sample_rows, topk_idx;
  // Page table of the step.
  Buf<int32_t> pt_pages, pt_seq_lens;
  Buf<uint32_t> pt_epochs;
  Buf<int64_t> pt_requests;
  // Page table of the verification batch, and its output.
  Buf<int32_t> vpt_pages, vpt_seq_lens;
  Buf<uint32_t> vpt_epochs;
  Buf<int64_t> vpt_requests;
  Buf<kernels::IntegrityMismatch> mismatches;
  Buf<int> mismatch_count;

  ~Impl();

  // cuda_backend_setup.cc: the weights of the slice on the device, the KV
  // caches poisoned.
  Status UploadWeights(SliceWeights* w, int max_tokens);
  Status UploadLayer(int l, SliceWeights* w, int max_tokens);
  Status UploadFfn(int l, SliceWeights* w, int max_tokens, DevLayer* d);
  Status AllocateLayerCache(int l, DevLayer* d);

  // cuda_backend_impl.cc.
  void Mark(const models::ProgramOp& op);
  // After ev_stop completed: the segments between marks, by op id.
  StepOpTimes SplitMarks() const;
  int QkWidth() const { return c.qk_nope + c.qk_rope; }
  Status EnsureScratch(int64_t n64);
  // y [m, w.n] = x [m, w.k] * W^T, BF16 out. Block-FP8 weights take FP8
  // activations in 1x128 groups, as GemmCpu's reference does.
  Status Linear(const DevLinear& w, const uint16_t* x, int m, uint16_t* y);
  kernels::AttentionPlan Plan(const kernels::AttentionProblem& p, int max_ctx);
  Status Attend(const kernels::AttentionProblem& p, const kernels::AttentionRows& r,
                const uint16_t* qin, const kernels::PagedKvDevice& cache, int max_ctx,
                uint16_t* out);

  // cuda_backend.cc: the program walk. OpFunction is the function that runs
  // an op: by id for the GEMMs and norms, by kind for the rest.
  using OpFn = Status (Impl::*)(const models::ProgramOp& op, int l, Step* s);
  static Result<OpFn> OpFunction(const models::ProgramOp& op);
  Status RunOp(const models::ProgramOp& op, int l, Step* s);

  // cuda_layer_ops.cc: one function per program op, as the CPU backend's.
  // Some ops run inside another's kernels here ("Fused"): the residual add
  // inside the next fused add + RMSNorm, the FFN's activation and down
  // projection and the shared expert inside MoeCuda::Run, W_UK/W_UV inside
  // the MLA attention op.
  Status Embed(const models::ProgramOp& op, int l, Step* s);
  Status Collective(const models::ProgramOp& op, int l, Step* s);
  Status Fused(const models::ProgramOp& op, int l, Step* s);
  Status InputNorm(const models::ProgramOp& op, int l, Step* s);
  Status Projection(const models::ProgramOp& op, int l, Step* s);
  Status NormRope(const models::ProgramOp& op, int l, Step* s);
  Status KvAppend(const models::ProgramOp& op, int l, Step* s);
  Status Indexer(const models::ProgramOp& op, int l, Step* s);
  Status GqaAttention(const models::ProgramOp& op, int l, Step* s);
  Status MlaAttention(const models::ProgramOp& op, int l, Step* s);
  Status OutProjection(const models::ProgramOp& op, int l, Step* s);
  Status PostAttentionNorm(const models::ProgramOp& op, int l, Step* s);
  Status DenseFfn(const models::ProgramOp& op, int l, Step* s);
  Status Route(const models::ProgramOp& op, int l, Step* s);
  Status Experts(const models::ProgramOp& op, int l, Step* s);
  Status FinalNorm(const models::ProgramOp& op, int l, Step* s);
  Status LmHead(const models::ProgramOp& op, int l, Step* s);
  Status Sample(const models::ProgramOp& op, int l, Step* s);
  // MoeCuda's plan (host uploads) and run over `route`.
  Status RunFfn(int l, const cuda::FfnRoute& route);
  Status ProbeLayer(int l, const Step& s, const LayerProbe& probe);

  // cuda_backend.cc: the step's rows and page table on the device.
  Result<Step> UploadStep(cuda::HostStep hs);
};

}  // namespace capplan::engine

#endif  // CAPPLAN_HAVE_CUDA
#endif  // CAPPLAN_ENGINE_CUDA_BACKEND_IMPL_H_
