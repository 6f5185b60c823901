// Host-callable launch wrappers for the attention-side CUDA kernels (only
// with CAPPLAN_HAVE_CUDA). Every pointer is a device pointer; every launch
// goes to the default stream and returns the launch status without
// synchronising. Planning (split counts, workspace size) happens on the host
// before the launches, FlashInfer plan/run style (FlashInfer's v0.2
// release post: flashinfer-ai/flashinfer-ai.github.io
// _posts/2024-12-12-flashinfer-v02-release.md).
#ifndef CAPPLAN_KERNELS_ATTENTION_ATTENTION_CUDA_H_
#define CAPPLAN_KERNELS_ATTENTION_ATTENTION_CUDA_H_

#ifdef CAPPLAN_HAVE_CUDA

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/paged_kv.h"
#include "kernels/formats/bf16.h"

namespace capplan::kernels {

struct PagedKvDevice {
  PagedKvLayout layout;
  void* k = nullptr;          // KElems() elements of layout.dtype
  void* v = nullptr;          // VElems() elements (null for MLA)
  KvPageTag* tags = nullptr;  // num_pages
  float k_scale = 1.0f;
  float v_scale = 1.0f;
};

struct PageTableDevice {
  int batch = 0;
  int max_pages = 0;
  const int32_t* pages = nullptr;        // [batch, max_pages]
  const uint32_t* epochs = nullptr;      // [batch, max_pages]
  const int64_t* request_ids = nullptr;  // [batch]
  const int32_t* seq_lens = nullptr;     // [batch]
};

// paged_kv.cu. Tokens whose position maps outside the page table or to the
// poison page are skipped and counted in *bad_tokens (when not null; the
// caller zeroes it).
Status LaunchAppendKv(int n_tokens, const Bf16* k_new, const Bf16* v_new, const int32_t* token_row,
                      const int32_t* token_pos, const PageTableDevice& pt,
                      const PagedKvDevice& cache, int* bad_tokens);
// paged_kv.cu. Zeroes *count (async), then records up to `cap` mismatches.
// Output order is not deterministic; the count is.
Status LaunchVerifyKvIntegrity(const PageTableDevice& pt, const KvPageTag* tags, int num_pages,
                               int page_size, int cap, IntegrityMismatch* out, int* count);

// paged_attention.cu. Split-KV plan: enough CTAs for ~2 per SM, at least
// 256 tokens per split.
struct AttentionPlan {
  int num_splits = 1;
  int split_tokens = 0;  // tokens per split (multiple of the 16-token tile)
  int head_tiles = 1;    // ceil(group / 16)
  size_t workspace_bytes = 0;
};
AttentionPlan PlanPagedAttention(const AttentionProblem& p, int max_row_tokens, int sm_count);
// out [rows, q_heads, v_dim] BF16; q [rows, q_heads, k_dim] BF16. `rows`
// holds device pointers. workspace: plan.workspace_bytes (may be null when 0).
Status LaunchPagedAttention(const AttentionProblem& p, const AttentionRows& rows, const Bf16* q,
                            const PagedKvDevice& cache, const AttentionPlan& plan, void* workspace,
                            Bf16* out);

// elementwise.cu. Outputs BF16.
Status LaunchFusedAddRmsNorm(int n, int d, float eps, const Bf16* x, Bf16* residual, const Bf16* w,
                             Bf16* y);
Status LaunchSiluMul(int n, int d, const Bf16* gate_up, Bf16* y);
// In place on x [n, heads, head_dim].
Status LaunchRope(int n, int heads, int head_dim, int rope_offset, int rope_dim, float theta,
                  const int32_t* positions, Bf16* x);

}  // namespace capplan::kernels

#endif  // CAPPLAN_HAVE_CUDA
#endif  // CAPPLAN_KERNELS_ATTENTION_ATTENTION_CUDA_H_
