// Glue kernels of the CUDA backend (see cuda_glue.h for why they are naive).
// Math in float; every BF16 store rounds once, as the CPU backend does.
#include "engine/cuda_glue.h"
#include "kernels/formats/bf16.h"
#include "kernels/formats/fp8.h"
#include "kernels/harness/cuda_timer.h"

namespace capplan::engine::cuda {
namespace {

using kernels::Bf16BitsToFloat;
using kernels::CudaLastError;
using kernels::FloatToBf16Bits;

constexpr int kThreads = 256;

int Blocks(size_t total) { return static_cast<int>((total + kThreads - 1) / kThreads); }

__device__ float BlockSum(float v, float* shared32) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared32[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x + 31) / 32 ? shared32[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) shared32[0] = v;
  }
  __syncthreads();
  return shared32[0];
}

__global__ void RmsNormRowsKernel(int d, const uint16_t* x, int xs, const uint16_t* w, float eps,
                                  uint16_t* y, int ys) {
  __shared__ float part[32];
  const uint16_t* xr = x + static_cast<size_t>(blockIdx.x) * xs;
  uint16_t* yr = y + static_cast<size_t>(blockIdx.x) * ys;
  float ss = 0.0f;
  for (int j = threadIdx.x; j < d; j += blockDim.x) {
    const float v = Bf16BitsToFloat(xr[j]);
    ss += v * v;
  }
  const float inv = rsqrtf(BlockSum(ss, part) / d + eps);
  // Each element is read and written by the same thread: safe in place.
  for (int j = threadIdx.x; j < d; j += blockDim.x) {
    yr[j] = FloatToBf16Bits(Bf16BitsToFloat(xr[j]) * inv * Bf16BitsToFloat(w[j]));
  }
}

__global__ void MlaAbsorbQKernel(int heads, int nope, int rope, int lora, const uint16_t* q,
                                 const uint16_t* w_uk, uint16_t* q_att) {
  const int row_head = blockIdx.x;  // row * heads + head
  const int head = row_head % heads;
  const uint16_t* qh = q + static_cast<size_t>(row_head) * (nope + rope);
  const uint16_t* uk = w_uk + static_cast<size_t>(head) * nope * lora;
  uint16_t* out = q_att + static_cast<size_t>(row_head) * (lora + rope);
  for (int d = threadIdx.x; d < lora + rope; d += blockDim.x) {
    if (d < lora) {
      float acc = 0.0f;
      for (int j = 0; j < nope; ++j) {
        acc = fmaf(Bf16BitsToFloat(qh[j]), Bf16BitsToFloat(uk[static_cast<size_t>(j) * lora + d]),
                   acc);
      }
      out[d] = FloatToBf16Bits(acc);
    } else {
      out[d] = qh[nope + d - lora];
    }
  }
}

__global__ void MlaUpVKernel(int heads, int lora, int v, const uint16_t* o_lat,
                             const uint16_t* w_uv, uint16_t* out) {
  const int row_head = blockIdx.x;
  const int head = row_head % heads;
  const uint16_t* o = o_lat + static_cast<size_t>(row_head) * lora;
  const uint16_t* uv = w_uv + static_cast<size_t>(head) * lora * v;
  for (int d = threadIdx.x; d < v; d += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < lora; ++j) {
      acc = fmaf(Bf16BitsToFloat(o[j]), Bf16BitsToFloat(uv[static_cast<size_t>(j) * v + d]), acc);
    }
    out[static_cast<size_t>(row_head) * v + d] = FloatToBf16Bits(acc);
  }
}

// One warp per (token, expert): lanes stride the hidden dim (coalesced).
__global__ void RouterLogitsKernel(int n, int experts, int hidden, const uint16_t* x,
                                   const float* router, float* logits) {
  const size_t warp = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= static_cast<size_t>(n) * experts) return;
  const size_t t = warp / experts, e = warp % experts;
  const uint16_t* xr = x + t * hidden;
  const float* wr = router + e * hidden;
  float acc = 0.0f;
  for (int j = lane; j < hidden; j += 32) acc = fmaf(Bf16BitsToFloat(xr[j]), wr[j], acc);
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) logits[warp] = acc;
}

__global__ void IndexScoresKernel(int n, int heads, const uint16_t* q, const uint16_t* w,
                                  const int32_t* row_seq, const int32_t* row_ctx,
                                  const int32_t* page_table, int max_pages, IndexKeyCache c,
                                  int max_ctx, float* scores) {
  const size_t e = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= static_cast<size_t>(n) * max_ctx) return;
  const int row = static_cast<int>(e / max_ctx), t = static_cast<int>(e % max_ctx);
  if (t >= row_ctx[row]) return;
  const int page = page_table[static_cast<size_t>(row_seq[row]) * max_pages + t / c.page_size];
  const size_t off = (static_cast<size_t>(page) * c.page_size + t % c.page_size) * c.dim;
  float score = 0.0f;
  for (int h = 0; h < heads; ++h) {
    const uint16_t* qh = q + (static_cast<size_t>(row) * heads + h) * c.dim;
    float dot = 0.0f;
    for (int d = 0; d < c.dim; ++d) {
      const float k =
          c.fp8 ? kernels::Fp8E4m3ToFloat(static_cast<const uint8_t*>(c.keys)[off + d]) * c.scale
                : Bf16BitsToFloat(static_cast<const uint16_t*>(c.keys)[off + d]);
      dot = fmaf(Bf16BitsToFloat(qh[d]), k, dot);
    }
    score = fmaf(Bf16BitsToFloat(w[static_cast<size_t>(row) * heads + h]), fmaxf(dot, 0.0f), score);
  }
  scores[e] = score;
}

// Order-preserving map of a float onto uint32 (larger float, larger key).
__device__ __forceinline__ uint32_t OrderedKey(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Inclusive Hillis-Steele scan over blockDim.x values in shared memory.
__device__ int BlockInclusiveScan(int v, int* buf) {
  buf[threadIdx.x] = v;
  __syncthreads();
  for (int o = 1; o < blockDim.x; o <<= 1) {
    const int add = threadIdx.x >= o ? buf[threadIdx.x - o] : 0;
    __syncthreads();
    buf[threadIdx.x] += add;
    __syncthreads();
  }
  const int r = buf[threadIdx.x];
  __syncthreads();
  return r;
}

// One block per row. The k-th largest key is found by bisection on its 32
// bits (32 counting passes over the row); then one ordered pass writes every
// position above it and, in position order, as many ties as are still
// needed. Slow but exact and deterministic.
__global__ void TopkSelectKernel(int max_ctx, const float* scores, const int32_t* row_ctx, int topk,
                                 int32_t* idx) {
  __shared__ int count;
  __shared__ int scan[kThreads];
  const int row = blockIdx.x;
  const int ctx = row_ctx[row];
  const float* s = scores + static_cast<size_t>(row) * max_ctx;
  int32_t* out = idx + static_cast<size_t>(row) * topk;
  if (ctx <= topk) {
    for (int j = threadIdx.x; j < topk; j += blockDim.x) out[j] = j < ctx ? j : -1;
    return;
  }
  uint32_t prefix = 0;
  for (int b = 31; b >= 0; --b) {
    const uint32_t cand = prefix | (1u << b);
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    int local = 0;
    for (int t = threadIdx.x; t < ctx; t += blockDim.x) local += OrderedKey(s[t]) >= cand;
    atomicAdd(&count, local);
    __syncthreads();
    if (count >= topk) prefix = cand;  // every thread reads the same count
    __syncthreads();
  }
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  int local_gt = 0;
  for (int t = threadIdx.x; t < ctx; t += blockDim.x) local_gt += OrderedKey(s[t]) > prefix;
  atomicAdd(&count, local_gt);
  __syncthreads();
  const int ties_needed = topk - count;
  int ties_seen = 0, written = 0;  // over earlier chunks
  for (int base = 0; base < ctx; base += blockDim.x) {
    const int t = base + threadIdx.x;
    const uint32_t key = t < ctx ? OrderedKey(s[t]) : 0u;
    const bool gt = t < ctx && key > prefix;
    const bool eq = t < ctx && key == prefix;
    const int eq_rank = BlockInclusiveScan(eq ? 1 : 0, scan);  // inclusive
    const bool take = gt || (eq && ties_seen + eq_rank <= ties_needed);
    // Ties seen in this chunk (the last thread's inclusive count).
    __shared__ int chunk_eq;
    if (threadIdx.x == blockDim.x - 1) chunk_eq = eq_rank;
    const int slot = BlockInclusiveScan(take ? 1 : 0, scan);
    __shared__ int chunk_taken;
    if (threadIdx.x == blockDim.x - 1) chunk_taken = slot;
    __syncthreads();
    if (take) out[written + slot - 1] = t;
    ties_seen += chunk_eq;
    written += chunk_taken;
    __syncthreads();
  }
  for (int j = written + threadIdx.x; j < topk; j += blockDim.x) out[j] = -1;
}

}  // namespace

Status LaunchRmsNormRows(int n, int d, const uint16_t* x, int x_stride, const uint16_t* w,
                         float eps, uint16_t* y, int y_stride, cudaStream_t s) {
  if (n <= 0) return Status::Ok();
  RmsNormRowsKernel<<<n, kThreads, 0, s>>>(d, x, x_stride, w, eps, y, y_stride);
  return CudaLastError("RmsNormRowsKernel launch");
}

Status LaunchMlaAbsorbQ(int n, int heads, int nope, int rope, int lora, const uint16_t* q,
                        const uint16_t* w_uk, uint16_t* q_att, cudaStream_t s) {
  if (n <= 0) return Status::Ok();
  MlaAbsorbQKernel<<<n * heads, kThreads, 0, s>>>(heads, nope, rope, lora, q, w_uk, q_att);
  return CudaLastError("MlaAbsorbQKernel launch");
}

Status LaunchMlaUpV(int n, int heads, int lora, int v, const uint16_t* o_lat, const uint16_t* w_uv,
                    uint16_t* out, cudaStream_t s) {
  if (n <= 0) return Status::Ok();
  MlaUpVKernel<<<n * heads, kThreads, 0, s>>>(heads, lora, v, o_lat, w_uv, out);
  return CudaLastError("MlaUpVKernel launch");
}

Status LaunchRouterLogits(int n, int experts, int hidden, const uint16_t* x, const float* router,
                          float* logits, cudaStream_t s) {
  if (n <= 0) return Status::Ok();
  const size_t threads = static_cast<size_t>(n) * experts * 32;
  RouterLogitsKernel<<<Blocks(threads), kThreads, 0, s>>>(n, experts, hidden, x, router, logits);
  return CudaLastError("RouterLogitsKernel launch");
}

Status LaunchIndexScores(int n, int heads, const uint16_t* q, const uint16_t* w,
                         const int32_t* row_seq, const int32_t* row_ctx, const int32_t* page_table,
                         int max_pages, const IndexKeyCache& cache, int max_ctx, float* scores,
                         cudaStream_t s) {
  if (n <= 0 || max_ctx <= 0) return Status::Ok();
  const size_t total = static_cast<size_t>(n) * max_ctx;
  IndexScoresKernel<<<Blocks(total), kThreads, 0, s>>>(n, heads, q, w, row_seq, row_ctx, page_table,
                                                       max_pages, cache, max_ctx, scores);
  return CudaLastError("IndexScoresKernel launch");
}

Status LaunchTopkSelect(int n, int max_ctx, const float* scores, const int32_t* row_ctx, int topk,
                        int32_t* idx, cudaStream_t s) {
  if (n <= 0 || topk <= 0) return Status::Ok();
  TopkSelectKernel<<<n, kThreads, 0, s>>>(max_ctx, scores, row_ctx, topk, idx);
  return CudaLastError("TopkSelectKernel launch");
}

}  // namespace capplan::engine::cuda
