// The CUDA backend's glue kernels: the small pieces of the model slice that
// the Kernels libraries do not provide (only with CAPPLAN_HAVE_CUDA).
//
// They are plain, unfused, one-thread-or-warp-per-output kernels written to
// mirror the CPU backend's math step by step, not to be fast: MLA's absorbed
// W_UK / W_UV products, the strided RMSNorm of MLA's latent, the FP32
// router GEMM, the DSA indexer scores and its top-k. A serving engine fuses
// or tensor-cores these; their time is inside every measured iteration of the
// CUDA backend, and calibrate/ENGINE_RUN.md says so.
#ifndef CAPPLAN_ENGINE_CUDA_GLUE_H_
#define CAPPLAN_ENGINE_CUDA_GLUE_H_

#ifdef CAPPLAN_HAVE_CUDA

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace capplan::engine::cuda {

// y[r, 0:d] = bf16(x[r, 0:d] / rms * w), rows strided; y may alias x.
Status LaunchRmsNormRows(int n, int d, const uint16_t* x, int x_stride, const uint16_t* w,
                         float eps, uint16_t* y, int y_stride, cudaStream_t s);
// MLA absorbed query: q [n, heads, nope+rope] (rope part already rotated),
// w_uk [heads][nope][lora] -> q_att [n, heads, lora+rope] = [q_nope W_uk, q_rope].
Status LaunchMlaAbsorbQ(int n, int heads, int nope, int rope, int lora, const uint16_t* q,
                        const uint16_t* w_uk, uint16_t* q_att, cudaStream_t s);
// MLA value up-projection: o_lat [n, heads, lora], w_uv [heads][lora][v]
// -> out [n, heads, v].
Status LaunchMlaUpV(int n, int heads, int lora, int v, const uint16_t* o_lat, const uint16_t* w_uv,
                    uint16_t* out, cudaStream_t s);
// logits [n, experts] = x [n, hidden] (BF16) * router [experts, hidden]^T in FP32.
Status LaunchRouterLogits(int n, int experts, int hidden, const uint16_t* x, const float* router,
                          float* logits, cudaStream_t s);

// The DSA indexer's key cache as the scorer reads it (one key per token,
// paged like the KV cache, BF16 or FP8 codes with a per-tensor scale).
struct IndexKeyCache {
  const void* keys = nullptr;  // [pages][page_size][dim]
  bool fp8 = false;
  float scale = 1.0f;
  int page_size = 16;
  int dim = 0;
};
// scores [n, max_ctx]: scores[i, t] = sum_h w[i, h] * relu(q[i, h] . key_t)
// for t < row_ctx[i] (others untouched). q [n, heads, dim], w [n, heads].
Status LaunchIndexScores(int n, int heads, const uint16_t* q, const uint16_t* w,
                         const int32_t* row_seq, const int32_t* row_ctx, const int32_t* page_table,
                         int max_pages, const IndexKeyCache& cache, int max_ctx, float* scores,
                         cudaStream_t s);
// idx [n, topk]: the positions of each row's top-k scores in ascending
// position order, ties to the earlier position (the CPU backend's rule);
// rows with ctx <= topk list 0..ctx-1. Unused entries are -1.
Status LaunchTopkSelect(int n, int max_ctx, const float* scores, const int32_t* row_ctx, int topk,
                        int32_t* idx, cudaStream_t s);

}  // namespace capplan::engine::cuda

#endif  // CAPPLAN_HAVE_CUDA
#endif  // CAPPLAN_ENGINE_CUDA_GLUE_H_
