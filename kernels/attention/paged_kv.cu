// CUDA: paged KV append and page-integrity verification.
//
// Append: one CTA per new token; threads stride over kv_heads * dim so the
// writes of one token are contiguous. FP8 caches quantise with the
// per-tensor 1/scale (saturating RNE, kernels/formats/fp8.h). The tag
// (request, logical page, epoch) is stamped by thread 0 of every token of
// the page: identical values, so the duplicate stores are harmless.
// Bytes: n * kv_heads * (k_dim + v_dim) * (2 + elem) + 16 n. FLOPs: ~0.
// Roofline: HBM (target: "device copy" row, >= 90% of measured copy, at
// large n; tiny n is launch-bound).
//
// Verify: one thread per page-table entry; live entries compare the tag of
// their physical page with (request, j, epoch) and append mismatches to a
// capped buffer through an atomic counter. Runs as its own launch before
// the decode step (engine/page_tag.h); attention kernels never read tags.
// Bytes: batch * max_pages * 8 + live pages * 16. Roofline: HBM, but at
// realistic sizes (<= ~1 MB) it is launch-bound: expect a few us.
//
// Run: `ctest -R AppendKvGpu|VerifyKvGpu` (tests/kernels/attention) or
// `capplan-kernel-bench --suite paged_kv_append --suite kv_integrity_verify`.
#include "kernels/attention/attention_cuda.h"
#include "kernels/formats/fp8.h"
#include "kernels/harness/cuda_timer.h"

namespace capplan::kernels {

namespace {

template <typename KvT>
__device__ __forceinline__ KvT Narrow(uint16_t bf16_bits, float inv_scale);
template <>
__device__ __forceinline__ uint16_t Narrow<uint16_t>(uint16_t b, float) {
  return b;
}
template <>
__device__ __forceinline__ uint8_t Narrow<uint8_t>(uint16_t b, float inv_scale) {
  return FloatToFp8E4m3(Bf16BitsToFloat(b) * inv_scale);
}

template <typename KvT>
__global__ void AppendKvKernel(const uint16_t* __restrict__ k_new,
                               const uint16_t* __restrict__ v_new,
                               const int32_t* __restrict__ token_row,
                               const int32_t* __restrict__ token_pos, PageTableDevice pt,
                               PagedKvLayout l, KvT* __restrict__ k, KvT* __restrict__ v,
                               KvPageTag* __restrict__ tags, float inv_k, float inv_v,
                               int* bad_tokens) {
  const int i = blockIdx.x;
  const int row = token_row[i], pos = token_pos[i];
  const int lp = pos / l.page_size, slot = pos % l.page_size;
  const bool in_table = row >= 0 && row < pt.batch && pos >= 0 && lp < pt.max_pages;
  const int page = in_table ? pt.pages[static_cast<size_t>(row) * pt.max_pages + lp] : -1;
  if (!KvPageInPool(page, l.num_pages)) {
    if (threadIdx.x == 0 && bad_tokens) atomicAdd(bad_tokens, 1);
    return;
  }
  const size_t kn = static_cast<size_t>(l.kv_heads) * l.k_dim;
  const size_t kdst = (static_cast<size_t>(page) * l.page_size + slot) * kn;
  for (size_t e = threadIdx.x; e < kn; e += blockDim.x) {
    k[kdst + e] = Narrow<KvT>(k_new[i * kn + e], inv_k);
  }
  const size_t vn = static_cast<size_t>(l.kv_heads) * l.v_dim;
  const size_t vdst = (static_cast<size_t>(page) * l.page_size + slot) * vn;
  for (size_t e = threadIdx.x; e < vn; e += blockDim.x) {
    v[vdst + e] = Narrow<KvT>(v_new[i * vn + e], inv_v);
  }
  if (threadIdx.x == 0) {
    tags[page] =
        KvPageTag{pt.request_ids[row], lp, pt.epochs[static_cast<size_t>(row) * pt.max_pages + lp]};
  }
}

__global__ void VerifyKernel(PageTableDevice pt, const KvPageTag* __restrict__ tags, int num_pages,
                             int page_size, int cap, IntegrityMismatch* out, int* count) {
  const size_t total = static_cast<size_t>(pt.batch) * pt.max_pages;
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < total;
       e += size_t(gridDim.x) * blockDim.x) {
    const int b = static_cast<int>(e / pt.max_pages), j = static_cast<int>(e % pt.max_pages);
    const int live = (pt.seq_lens[b] + page_size - 1) / page_size;
    if (j >= live) continue;
    const int page = pt.pages[e];
    KvPageTag found;
    if (!KvPageTagMatches(tags, num_pages, page, pt.request_ids[b], j, pt.epochs[e], &found)) {
      const int slot = atomicAdd(count, 1);
      if (slot < cap) out[slot] = IntegrityMismatch{b, j, page, found};
    }
  }
}

}  // namespace

Status LaunchAppendKv(int n_tokens, const Bf16* k_new, const Bf16* v_new, const int32_t* token_row,
                      const int32_t* token_pos, const PageTableDevice& pt,
                      const PagedKvDevice& cache, int* bad_tokens) {
  if (n_tokens <= 0) return Status::Ok();
  const PagedKvLayout& l = cache.layout;
  const auto* kn = reinterpret_cast<const uint16_t*>(k_new);
  const auto* vn = reinterpret_cast<const uint16_t*>(v_new);
  const float ik = 1.0f / cache.k_scale, iv = 1.0f / cache.v_scale;
  if (l.dtype == KvDtype::kFp8) {
    AppendKvKernel<uint8_t>
        <<<n_tokens, 128>>>(kn, vn, token_row, token_pos, pt, l, static_cast<uint8_t*>(cache.k),
                            static_cast<uint8_t*>(cache.v), cache.tags, ik, iv, bad_tokens);
  } else {
    AppendKvKernel<uint16_t>
        <<<n_tokens, 128>>>(kn, vn, token_row, token_pos, pt, l, static_cast<uint16_t*>(cache.k),
                            static_cast<uint16_t*>(cache.v), cache.tags, ik, iv, bad_tokens);
  }
  return CudaLastError("AppendKvKernel launch");
}

Status LaunchVerifyKvIntegrity(const PageTableDevice& pt, const KvPageTag* tags, int num_pages,
                               int page_size, int cap, IntegrityMismatch* out, int* count) {
  if (cudaMemsetAsync(count, 0, sizeof(int)) != cudaSuccess) {
    return CudaLastError("LaunchVerifyKvIntegrity memset");
  }
  const size_t total = static_cast<size_t>(pt.batch) * pt.max_pages;
  if (total == 0) return Status::Ok();
  const int blocks = static_cast<int>(std::min<size_t>((total + 255) / 256, 4096));
  VerifyKernel<<<blocks, 256>>>(pt, tags, num_pages, page_size, cap, out, count);
  return CudaLastError("VerifyKernel launch");
}

}  // namespace capplan::kernels
