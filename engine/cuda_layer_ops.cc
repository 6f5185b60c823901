// The ops of one CUDA backend step, one function per op of the slice's layer
// program (models/layer_program.h), as the CPU backend's (cpu_backend.cc,
// cpu_attention.cc, cpu_ffn.cc). RunOp marks each op's start
// (engine/op_times.h) so the step's CUDA events split it by op id.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/cuda_backend_impl.h"
#include "engine/cuda_glue.h"
#include "engine/slice_math.h"
#include "kernels/moe/moe_permute.h"

namespace capplan::engine {

namespace op_ids = models::op_ids;
namespace {

using cuda::B;
using cuda::Cuda;
using cuda::Ensure;
using models::ProgramOp;
using Step = cuda::Step;

constexpr float kEps = slice_math::kRmsEps;
constexpr float kTheta = static_cast<float>(slice_math::kRopeTheta);

}  // namespace

Status CudaBackend::Impl::Embed(const ProgramOp&, int, Step* s) {
  return kernels::LaunchGatherRows(embedding.get(), token_ids.get(), s->n, c.hidden, resid.get());
}

// One TP rank: its partial sums are its outputs, so a collective moves
// nothing here.
Status CudaBackend::Impl::Collective(const ProgramOp&, int, Step*) { return Status::Ok(); }

// An op whose work another op's kernels do here (cuda_backend_impl.h).
Status CudaBackend::Impl::Fused(const ProgramOp&, int, Step*) { return Status::Ok(); }

// Residual stream: resid holds x; `add` the previous sublayer's output
// (zeros before the first layer). x = bf16(x + add); h = RMSNorm(x): the
// previous layer's norm.residual runs here.
Status CudaBackend::Impl::InputNorm(const ProgramOp&, int l, Step* s) {
  return kernels::LaunchFusedAddRmsNorm(s->n, c.hidden, kEps, B(l == 0 ? zeros.get() : add.get()),
                                        B(resid.get()), B(layers[l].attn_norm.get()), B(h.get()));
}

// The attention projections, by op id. The q latent's RMSNorm runs with
// q_a_proj (the pricer counts it in attn.norm_rope); the DSA indexer's
// queries are projected from the hidden state, as the CPU backend does.
Status CudaBackend::Impl::Projection(const ProgramOp& op, int l, Step* s) {
  const DevLayer& L = layers[l];
  const std::string& id = op.id;
  const int n = s->n;
  if (id == op_ids::kQAProj) {
    CAPPLAN_RETURN_IF_ERROR(Linear(L.wq_a, h.get(), n, cq.get()));
    return cuda::LaunchRmsNormRows(n, c.q_lora_rank, cq.get(), c.q_lora_rank, L.q_a_norm.get(),
                                   kEps, cq.get(), c.q_lora_rank, nullptr);
  }
  if (id == op_ids::kQBProj) return Linear(L.wq_b, cq.get(), n, q.get());
  if (id == op_ids::kQProj) return Linear(L.wq, h.get(), n, q.get());
  if (id == op_ids::kKProj) return Linear(L.wk, h.get(), n, k.get());
  if (id == op_ids::kVProj) return Linear(L.wv, h.get(), n, v.get());
  if (id == op_ids::kKvAProj) return Linear(L.wkv_a, h.get(), n, kv.get());
  if (id == op_ids::kIndexerWqB) return Linear(L.wi_q, h.get(), n, iq.get());
  if (id == op_ids::kIndexerWk) return Linear(L.wi_k, h.get(), n, ik.get());
  if (id == op_ids::kIndexerWeightsProj) return Linear(L.wi_w, h.get(), n, iw.get());
  return Status::Internal("CUDA backend: no projection " + id);
}

// MLA: the kv latent's RMSNorm and RoPE on its rope part and on each query
// head's; GQA: RoPE on every KV and query head.
Status CudaBackend::Impl::NormRope(const ProgramOp& op, int l, Step* s) {
  const int n = s->n;
  if (op.id == op_ids::kNormRope) {
    const int lora = c.kv_lora_rank, rope = c.qk_rope, nope = c.qk_nope;
    CAPPLAN_RETURN_IF_ERROR(cuda::LaunchRmsNormRows(n, lora, kv.get(), lora + rope,
                                                    layers[l].kv_a_norm.get(), kEps, kv.get(),
                                                    lora + rope, nullptr));
    CAPPLAN_RETURN_IF_ERROR(
        kernels::LaunchRope(n, 1, lora + rope, lora, rope, kTheta, token_pos.get(), B(kv.get())));
    return kernels::LaunchRope(n, c.q_heads, nope + rope, nope, rope, kTheta, token_pos.get(),
                               B(q.get()));
  }
  if (op.id != op_ids::kRope) return Status::Internal("CUDA backend: no elementwise op " + op.id);
  const int hd = c.head_dim;
  CAPPLAN_RETURN_IF_ERROR(
      kernels::LaunchRope(n, c.kv_heads, hd, 0, hd, kTheta, token_pos.get(), B(k.get())));
  return kernels::LaunchRope(n, c.q_heads, hd, 0, hd, kTheta, token_pos.get(), B(q.get()));
}

// The new tokens' cache entries (the append kernel stamps the page tags):
// GQA K and V; MLA the latent + rope row and, in a layer computing a fresh
// top-k, the indexer key.
Status CudaBackend::Impl::KvAppend(const ProgramOp&, int l, Step* s) {
  const DevLayer& L = layers[l];
  if (c.attention == models::AttentionKind::kGqa) {
    return kernels::LaunchAppendKv(s->n, B(k.get()), B(v.get()), token_row.get(), token_pos.get(),
                                   s->ptd, L.cache, nullptr);
  }
  CAPPLAN_RETURN_IF_ERROR(kernels::LaunchAppendKv(s->n, B(kv.get()), nullptr, token_row.get(),
                                                  token_pos.get(), s->ptd, L.cache, nullptr));
  if (!c.program->program->GroupOf(l)->index_fresh) return Status::Ok();
  return kernels::LaunchAppendKv(s->n, B(ik.get()), nullptr, token_row.get(), token_pos.get(),
                                 s->ptd, L.index_cache, nullptr);
}

// The DSA indexer on a fresh layer: every row's top-k list into topk_idx,
// which the IndexShare layers after it in this step reuse.
Status CudaBackend::Impl::Indexer(const ProgramOp&, int l, Step* s) {
  const DevLayer& L = layers[l];
  const int n = s->n, max_ctx = s->max_ctx;
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
        row_ctx.get() + r0, pt_pages.get(), s->max_pages, ikc, max_ctx, scores.get(), nullptr));
    CAPPLAN_RETURN_IF_ERROR(
        cuda::LaunchTopkSelect(nr, max_ctx, scores.get(), row_ctx.get() + r0, c.index_topk,
                               topk_idx.get() + static_cast<size_t>(r0) * c.index_topk, nullptr));
  }
  return Status::Ok();
}

// GQA decode and prefill rows: one launch for all of them.
Status CudaBackend::Impl::GqaAttention(const ProgramOp&, int l, Step* s) {
  if (s->attended) return Status::Ok();
  s->attended = true;
  const DevLayer& L = layers[l];
  const int hd = c.head_dim;
  kernels::AttentionProblem p;
  p.rows = s->n;
  p.q_heads = c.q_heads;
  p.kv_heads = c.kv_heads;
  p.k_dim = hd;
  p.v_dim = hd;
  p.sm_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  p.k_scale = L.cache.k_scale;
  p.v_scale = L.cache.v_scale;
  p.page_size = page_size;
  p.max_pages = s->max_pages;
  p.kv_dtype = L.cache.layout.dtype;
  return Attend(p, s->rows, q.get(), L.cache, s->max_ctx, attn.get());
}

// MLA in the absorbed form, decode and prefill rows in one launch: q_nope
// W_UK (attn.kv_b_proj.absorbed's first half; the kernel also carries the
// rotated rope part, so it runs after attn.norm_rope), attention over the
// latent cache (DSA rows over their top-k lists: IndexShare layers reuse the
// list still in topk_idx from the last fresh layer of this step), and the
// latent output up through W_UV (kv_b's second half).
Status CudaBackend::Impl::MlaAttention(const ProgramOp&, int l, Step* s) {
  if (s->attended) return Status::Ok();
  s->attended = true;
  const DevLayer& L = layers[l];
  const int n = s->n, lora = c.kv_lora_rank, rope = c.qk_rope, nope = c.qk_nope;
  CAPPLAN_RETURN_IF_ERROR(cuda::LaunchMlaAbsorbQ(n, c.q_heads, nope, rope, lora, q.get(),
                                                 L.w_uk.get(), q_att.get(), nullptr));
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
  p.max_pages = s->max_pages;
  p.kv_dtype = L.cache.layout.dtype;
  kernels::AttentionRows r = s->rows;
  if (c.index_topk > 0) {
    p.topk = c.index_topk;
    r.topk_idx = topk_idx.get();
  }
  CAPPLAN_RETURN_IF_ERROR(Attend(p, r, q_att.get(), L.cache, s->max_ctx, attn.get()));
  return cuda::LaunchMlaUpV(n, c.q_heads, lora, c.v_head_dim, attn.get(), L.w_uv.get(), o_v.get(),
                            nullptr);
}

// o_proj into `add`, the next residual addend (MLA: from W_UV's output).
Status CudaBackend::Impl::OutProjection(const ProgramOp&, int l, Step* s) {
  const bool gqa = c.attention == models::AttentionKind::kGqa;
  return Linear(layers[l].wo, gqa ? attn.get() : o_v.get(), s->n, add.get());
}

Status CudaBackend::Impl::PostAttentionNorm(const ProgramOp&, int l, Step* s) {
  return kernels::LaunchFusedAddRmsNorm(s->n, c.hidden, kEps, B(add.get()), B(resid.get()),
                                        B(layers[l].ffn_norm.get()), B(h.get()));
}

// dense.gate_up_proj: the dense FFN runs as MoeCuda's one expert that every
// token picks at weight 1 (its activation and down projection inside).
Status CudaBackend::Impl::DenseFfn(const ProgramOp&, int l, Step* s) {
  const int n = s->n;
  cuda::FfnRoute route;
  kernels::MoePermutation& perm = route.perm;
  perm.tokens = n;
  perm.top_k = 1;
  perm.num_experts = 1;
  perm.expert_offsets = {0, n};
  perm.row_token.resize(n);
  std::iota(perm.row_token.begin(), perm.row_token.end(), 0);
  perm.slot_row = perm.row_token;
  route.weights.assign(n, 1.0f);
  return RunFfn(l, route);
}

// moe.gate: router logits on the GPU, routed on the host (download,
// RouteCpu, permutation by expert) for moe.experts.
Status CudaBackend::Impl::Route(const ProgramOp&, int l, Step* s) {
  const DevLayer& L = layers[l];
  const int n = s->n, E = c.n_experts;
  CAPPLAN_RETURN_IF_ERROR(cuda::LaunchRouterLogits(n, E, c.hidden, h.get(), L.router.get(),
                                                   router_logits.get(), nullptr));
  HostSpan host(&host_us);
  std::vector<float> logits_host(static_cast<size_t>(n) * E);
  CAPPLAN_RETURN_IF_ERROR(
      Cuda(cudaMemcpy(logits_host.data(), router_logits.get(), logits_host.size() * sizeof(float),
                      cudaMemcpyDeviceToHost),
           "router logits download"));
  std::vector<int> ids(static_cast<size_t>(n) * c.top_k);
  s->route.weights.resize(ids.size());
  CAPPLAN_RETURN_IF_ERROR(kernels::RouteCpu(L.router_config, logits_host.data(), n, ids.data(),
                                            s->route.weights.data()));
  CAPPLAN_ASSIGN_OR_RETURN(s->route.perm, kernels::PermuteByExpert(ids.data(), n, c.top_k, E));
  return Status::Ok();
}

// moe.experts: the routed experts and the shared expert (MoeCuda::Run).
Status CudaBackend::Impl::Experts(const ProgramOp&, int l, Step* s) { return RunFfn(l, s->route); }

// The FFN's output is the next residual addend.
Status CudaBackend::Impl::RunFfn(int l, const cuda::FfnRoute& route) {
  DevLayer& L = layers[l];
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

// The last layer's residual add and the final norm, then the rows that
// want a token gathered.
Status CudaBackend::Impl::FinalNorm(const ProgramOp&, int, Step* s) {
  const int H = c.hidden, ms = static_cast<int>(s->which.size());
  CAPPLAN_RETURN_IF_ERROR(kernels::LaunchFusedAddRmsNorm(
      s->n, H, kEps, B(add.get()), B(resid.get()), B(final_norm.get()), B(h.get())));
  CAPPLAN_RETURN_IF_ERROR(Ensure(&last, static_cast<size_t>(ms) * H));
  return kernels::LaunchGatherRows(h.get(), sample_rows.get(), ms, H, last.get());
}

Status CudaBackend::Impl::LmHead(const ProgramOp&, int, Step* s) {
  const int ms = static_cast<int>(s->which.size());
  CAPPLAN_RETURN_IF_ERROR(Ensure(&logits, static_cast<size_t>(ms) * c.vocab));
  return Linear(lm_head, last.get(), ms, logits.get());
}

// Greedy sampling on the host: the logits downloaded, argmax per row.
Status CudaBackend::Impl::Sample(const ProgramOp&, int, Step* s) {
  const int ms = static_cast<int>(s->which.size());
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
    (*s->next_tokens)[s->which[j]] = best;
    s->logits->push_back(std::move(row));
  }
  return Status::Ok();
}

}  // namespace capplan::engine
