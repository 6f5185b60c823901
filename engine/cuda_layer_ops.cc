// The ops of one CUDA backend step, one function each, in the order the CPU
// backend computes the same step (cpu_backend.cc, cpu_attention.cc). Each
// marks its op class first (engine/op_times.h) so the step's CUDA events
// split by class.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/cuda_backend_impl.h"
#include "engine/cuda_glue.h"
#include "engine/slice_math.h"
#include "kernels/moe/moe_permute.h"

namespace capplan::engine {
namespace {

using cuda::B;
using cuda::Cuda;
using cuda::Ensure;
using models::OpClass;

constexpr float kEps = slice_math::kRmsEps;
constexpr float kTheta = static_cast<float>(slice_math::kRopeTheta);

}  // namespace

Status CudaBackend::Impl::Embedding(const Step& s) {
  Mark(OpClass::kElementwise);
  return kernels::LaunchGatherRows(embedding.get(), token_ids.get(), s.n, c.hidden, resid.get());
}

// Residual stream: resid holds x; `add` the previous sublayer's output
// (zeros before the first layer). x = bf16(x + add); h = RMSNorm(x).
Status CudaBackend::Impl::InputNorm(int l, const Step& s) {
  Mark(OpClass::kElementwise);
  return kernels::LaunchFusedAddRmsNorm(s.n, c.hidden, kEps, B(l == 0 ? zeros.get() : add.get()),
                                        B(resid.get()), B(layers[l].attn_norm.get()), B(h.get()));
}

Status CudaBackend::Impl::GqaAttention(int l, const Step& s) {
  const DevLayer& L = layers[l];
  const int n = s.n, hd = c.head_dim;
  CAPPLAN_RETURN_IF_ERROR(Linear(L.wq, h.get(), n, q.get()));
  CAPPLAN_RETURN_IF_ERROR(Linear(L.wk, h.get(), n, k.get()));
  CAPPLAN_RETURN_IF_ERROR(Linear(L.wv, h.get(), n, v.get()));
  Mark(OpClass::kElementwise);
  CAPPLAN_RETURN_IF_ERROR(
      kernels::LaunchRope(n, c.kv_heads, hd, 0, hd, kTheta, token_pos.get(), B(k.get())));
  Mark(OpClass::kElementwise);
  CAPPLAN_RETURN_IF_ERROR(
      kernels::LaunchRope(n, c.q_heads, hd, 0, hd, kTheta, token_pos.get(), B(q.get())));
  Mark(OpClass::kAttention);
  CAPPLAN_RETURN_IF_ERROR(kernels::LaunchAppendKv(n, B(k.get()), B(v.get()), token_row.get(),
                                                  token_pos.get(), s.ptd, L.cache, nullptr));
  kernels::AttentionProblem p;
  p.rows = n;
  p.q_heads = c.q_heads;
  p.kv_heads = c.kv_heads;
  p.k_dim = hd;
  p.v_dim = hd;
  p.sm_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  p.k_scale = L.cache.k_scale;
  p.v_scale = L.cache.v_scale;
  p.page_size = page_size;
  p.max_pages = s.max_pages;
  p.kv_dtype = L.cache.layout.dtype;
  CAPPLAN_RETURN_IF_ERROR(Attend(p, s.rows, q.get(), L.cache, s.max_ctx, attn.get()));
  return Linear(L.wo, attn.get(), n, add.get());
}

// MLA's query: through the q LoRA (normed) when the model has one.
Status CudaBackend::Impl::MlaQuery(int l, const Step& s) {
  const DevLayer& L = layers[l];
  if (c.q_lora_rank == 0) return Linear(L.wq, h.get(), s.n, q.get());
  CAPPLAN_RETURN_IF_ERROR(Linear(L.wq_a, h.get(), s.n, cq.get()));
  Mark(OpClass::kElementwise);
  CAPPLAN_RETURN_IF_ERROR(cuda::LaunchRmsNormRows(s.n, c.q_lora_rank, cq.get(), c.q_lora_rank,
                                                  L.q_a_norm.get(), kEps, cq.get(), c.q_lora_rank,
                                                  nullptr));
  return Linear(L.wq_b, cq.get(), s.n, q.get());
}

// MLA's cached entry: the normed latent and the rotated rope key, appended;
// the query's rope part is rotated with it.
Status CudaBackend::Impl::MlaLatent(int l, const Step& s) {
  const DevLayer& L = layers[l];
  const int n = s.n, lora = c.kv_lora_rank, rope = c.qk_rope, nope = c.qk_nope;
  CAPPLAN_RETURN_IF_ERROR(Linear(L.wkv_a, h.get(), n, kv.get()));
  Mark(OpClass::kElementwise);
  CAPPLAN_RETURN_IF_ERROR(cuda::LaunchRmsNormRows(n, lora, kv.get(), lora + rope, L.kv_a_norm.get(),
                                                  kEps, kv.get(), lora + rope, nullptr));
  Mark(OpClass::kElementwise);
  CAPPLAN_RETURN_IF_ERROR(
      kernels::LaunchRope(n, 1, lora + rope, lora, rope, kTheta, token_pos.get(), B(kv.get())));
  Mark(OpClass::kElementwise);
  CAPPLAN_RETURN_IF_ERROR(kernels::LaunchRope(n, c.q_heads, nope + rope, nope, rope, kTheta,
                                              token_pos.get(), B(q.get())));
  Mark(OpClass::kAttention);
  return kernels::LaunchAppendKv(n, B(kv.get()), nullptr, token_row.get(), token_pos.get(), s.ptd,
                                 L.cache, nullptr);
}

// The DSA indexer's projections on a fresh layer, its key appended.
Status CudaBackend::Impl::MlaIndexerKeys(int l, const Step& s) {
  const DevLayer& L = layers[l];
  CAPPLAN_RETURN_IF_ERROR(Linear(L.wi_q, h.get(), s.n, iq.get()));
  CAPPLAN_RETURN_IF_ERROR(Linear(L.wi_k, h.get(), s.n, ik.get()));
  CAPPLAN_RETURN_IF_ERROR(Linear(L.wi_w, h.get(), s.n, iw.get()));
  Mark(OpClass::kAttention);
  return kernels::LaunchAppendKv(s.n, B(ik.get()), nullptr, token_row.get(), token_pos.get(), s.ptd,
                                 L.index_cache, nullptr);
}

// The DSA indexer on a fresh layer: every row's top-k list into topk_idx,
// which the following shared layers of this step reuse.
Status CudaBackend::Impl::DsaIndexer(int l, const Step& s) {
  const DevLayer& L = layers[l];
  const int n = s.n, max_ctx = s.max_ctx;
  Mark(OpClass::kAttention);
  // Scores for a slice of rows at a time: n x max_ctx floats would be
  // GBs for a long prefill chunk at 128K tokens of context.
  const int slice = static_cast<int>(
      std::clamp<int64_t>(cuda::kMaxIndexScoreFloats / std::max(max_ctx, 1), 1, std::max(n, 1)));
  CAPPLAN_RETURN_IF_ERROR(Ensure(&scores, static_cast<size_t>(slice) * max_ctx));
  cuda::IndexKeyCache ikc;
  ikc.keys = L.index_cache.k;
  ikc.fp8 = L.index_cache.layout.dtype == kernels::KvDtype::kFp8;
  ikc.scale = L.index_cache.k_scale;
  ikc.page_size = page_size;
  ikc.dim = c.index_head_dim;
  const size_t q_row = static_cast<size_t>(c.index_heads) * c.index_head_dim;
  for (int r0 = 0; r0 < n; r0 += slice) {
    const int nr = std::min(slice, n - r0);
    CAPPLAN_RETURN_IF_ERROR(cuda::LaunchIndexScores(
        nr, c.index_heads, iq.get() + r0 * q_row,
        iw.get() + static_cast<size_t>(r0) * c.index_heads, token_row.get() + r0,
        row_ctx.get() + r0, pt_pages.get(), s.max_pages, ikc, max_ctx, scores.get(), nullptr));
    CAPPLAN_RETURN_IF_ERROR(
        cuda::LaunchTopkSelect(nr, max_ctx, scores.get(), row_ctx.get() + r0, c.index_topk,
                               topk_idx.get() + static_cast<size_t>(r0) * c.index_topk, nullptr));
  }
  return Status::Ok();
}

// MLA in the absorbed form: q_nope W_UK against the latent cache (DSA rows
// over their top-k lists), the latent output up through W_UV, then o_proj.
// IndexShare: only fresh layers run the indexer; the others reuse the top-k
// list still in topk_idx from the last fresh layer of this step (layer 0 is
// always fresh).
Status CudaBackend::Impl::MlaAttention(int l, const Step& s) {
  const DevLayer& L = layers[l];
  const int n = s.n, lora = c.kv_lora_rank, rope = c.qk_rope, nope = c.qk_nope;
  Mark(OpClass::kAttention);
  CAPPLAN_RETURN_IF_ERROR(cuda::LaunchMlaAbsorbQ(n, c.q_heads, nope, rope, lora, q.get(),
                                                 L.w_uk.get(), q_att.get(), nullptr));
  if (c.IndexFresh(l)) CAPPLAN_RETURN_IF_ERROR(DsaIndexer(l, s));
  kernels::AttentionProblem p;
  p.rows = n;
  p.q_heads = c.q_heads;
  p.kv_heads = 1;
  p.k_dim = lora + rope;
  p.v_dim = lora;
  p.v_from_k = true;
  p.sm_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(nope + rope)));
  p.k_scale = L.cache.k_scale;
  p.v_scale = L.cache.k_scale;  // V is the latent part of the K row
  p.page_size = page_size;
  p.max_pages = s.max_pages;
  p.kv_dtype = L.cache.layout.dtype;
  kernels::AttentionRows r = s.rows;
  if (c.index_topk > 0) {
    p.topk = c.index_topk;
    r.topk_idx = topk_idx.get();
  }
  CAPPLAN_RETURN_IF_ERROR(Attend(p, r, q_att.get(), L.cache, s.max_ctx, attn.get()));
  Mark(OpClass::kAttention);
  CAPPLAN_RETURN_IF_ERROR(cuda::LaunchMlaUpV(n, c.q_heads, lora, c.v_head_dim, attn.get(),
                                             L.w_uv.get(), o_v.get(), nullptr));
  return Linear(L.wo, o_v.get(), n, add.get());
}

Status CudaBackend::Impl::PostAttentionNorm(int l, const Step& s) {
  Mark(OpClass::kElementwise);
  return kernels::LaunchFusedAddRmsNorm(s.n, c.hidden, kEps, B(add.get()), B(resid.get()),
                                        B(layers[l].ffn_norm.get()), B(h.get()));
}

// Router logits on the GPU, routed on the host (download, RouteCpu,
// permutation). A dense FFN is one expert that every token picks at weight 1.
Result<cuda::FfnRoute> CudaBackend::Impl::RouteFfn(int l, const Step& s) {
  const DevLayer& L = layers[l];
  const int n = s.n;
  cuda::FfnRoute route;
  if (!L.moe) {
    kernels::MoePermutation& perm = route.perm;
    perm.tokens = n;
    perm.top_k = 1;
    perm.num_experts = 1;
    perm.expert_offsets = {0, n};
    perm.row_token.resize(n);
    std::iota(perm.row_token.begin(), perm.row_token.end(), 0);
    perm.slot_row = perm.row_token;
    route.weights.assign(n, 1.0f);
    return route;
  }
  const int E = c.n_experts;
  Mark(OpClass::kMoe);
  CAPPLAN_RETURN_IF_ERROR(cuda::LaunchRouterLogits(n, E, c.hidden, h.get(), L.router.get(),
                                                   router_logits.get(), nullptr));
  HostSpan host(&host_us);
  std::vector<float> logits_host(static_cast<size_t>(n) * E);
  CAPPLAN_RETURN_IF_ERROR(
      Cuda(cudaMemcpy(logits_host.data(), router_logits.get(), logits_host.size() * sizeof(float),
                      cudaMemcpyDeviceToHost),
           "router logits download"));
  std::vector<int> ids(static_cast<size_t>(n) * c.top_k);
  route.weights.resize(ids.size());
  CAPPLAN_RETURN_IF_ERROR(
      kernels::RouteCpu(L.router_config, logits_host.data(), n, ids.data(), route.weights.data()));
  CAPPLAN_ASSIGN_OR_RETURN(route.perm, kernels::PermuteByExpert(ids.data(), n, c.top_k, E));
  return route;
}

// The experts (or the dense FFN) through MoeCuda; its output is the next
// residual addend.
Status CudaBackend::Impl::Ffn(int l, const cuda::FfnRoute& route) {
  DevLayer& L = layers[l];
  Mark(L.moe ? OpClass::kMoe : OpClass::kDenseGemm);  // a dense FFN prices as GEMMs
  {
    HostSpan host(&host_us);  // the plan's uploads
    CAPPLAN_RETURN_IF_ERROR(L.ffn->Plan(route.perm, route.weights.data()));
  }
  return L.ffn->Run(h.get(), add.get());
}

// x after the layer = bf16(resid + add), what the next fused add makes.
Status CudaBackend::Impl::ProbeLayer(int l, const Step& s, const LayerProbe& probe) {
  const int H = c.hidden;
  std::vector<uint16_t> host_r, host_a;
  CAPPLAN_RETURN_IF_ERROR(resid.Download(&host_r));
  CAPPLAN_RETURN_IF_ERROR(add.Download(&host_a));
  std::vector<float> rows_out(static_cast<size_t>(s.n) * H);
  for (size_t i = 0; i < rows_out.size(); ++i) {
    rows_out[i] = kernels::RoundToBf16(kernels::Bf16BitsToFloat(host_r[i]) +
                                       kernels::Bf16BitsToFloat(host_a[i]));
  }
  probe(l, rows_out, H);
  return Status::Ok();
}

// The final norm of the sampled rows, gathered, and the LM head.
Status CudaBackend::Impl::LmHead(const Step& s) {
  const int H = c.hidden, ms = static_cast<int>(s.which.size());
  Mark(OpClass::kElementwise);
  CAPPLAN_RETURN_IF_ERROR(kernels::LaunchFusedAddRmsNorm(s.n, H, kEps, B(add.get()), B(resid.get()),
                                                         B(final_norm.get()), B(h.get())));
  CAPPLAN_RETURN_IF_ERROR(Ensure(&last, static_cast<size_t>(ms) * H));
  Mark(OpClass::kElementwise);
  CAPPLAN_RETURN_IF_ERROR(kernels::LaunchGatherRows(h.get(), sample_rows.get(), ms, H, last.get()));
  CAPPLAN_RETURN_IF_ERROR(Ensure(&logits, static_cast<size_t>(ms) * c.vocab));
  return Linear(lm_head, last.get(), ms, logits.get());
}

// Greedy sampling on the host: the logits downloaded, argmax per row.
Status CudaBackend::Impl::Sample(const Step& s, std::vector<int32_t>* next_tokens,
                                 std::vector<std::vector<float>>* logits_out) {
  const int ms = static_cast<int>(s.which.size());
  Mark(OpClass::kOverhead);
  HostSpan host(&host_us);
  std::vector<uint16_t> lg(static_cast<size_t>(ms) * c.vocab);
  CAPPLAN_RETURN_IF_ERROR(Cuda(
      cudaMemcpy(lg.data(), logits.get(), lg.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost),
      "logits download"));
  for (int j = 0; j < ms; ++j) {
    std::vector<float> row(c.vocab);
    for (int t = 0; t < c.vocab; ++t) {
      row[t] = kernels::Bf16BitsToFloat(lg[static_cast<size_t>(j) * c.vocab + t]);
    }
    int best = 0;
    // NaN (a poison-page read) never compares greater, so it yields token 0.
    for (int t = 1; t < c.vocab; ++t) {
      if (row[t] > row[best]) best = t;
    }
    (*next_tokens)[s.which[j]] = best;
    logits_out->push_back(std::move(row));
  }
  return Status::Ok();
}

}  // namespace capplan::engine
