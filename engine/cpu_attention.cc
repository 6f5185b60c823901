// Attention ops of the CPU backend: the q/kv projections, latent norms and
// RoPE, the append of this step's K/V (or MLA latent) into the paged cache
// with its page tags, the DSA indexer, and the attention through the page
// tables. All appends of a layer happen before any read, as in an engine
// where the append kernel precedes the attention kernel of the same layer.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/cpu_backend.h"
#include "engine/slice_math.h"
#include "kernels/formats/bf16.h"

namespace capplan::engine {

namespace op_ids = models::op_ids;
namespace {

using kernels::RoundToBf16;
using slice_math::Dot;
using slice_math::Rope;
using slice_math::Softmax;
using slice_math::StoreKv;

void RmsNormInPlace(float* x, const std::vector<float>& w, int n) {
  slice_math::RmsNorm(x, w, n, x);  // reads x[i] before writing it
}

}  // namespace

// Qwen3-Next's q_proj (transformers Qwen3NextAttention): each head's
// head_dim queries followed by head_dim gate logits.
Status CpuBackend::GatedQueries(const OpWeights& w, int n, Step* s) {
  std::vector<float> both;
  CAPPLAN_RETURN_IF_ERROR(RunGemm(w.gemm, s->h, n, &both, s));
  const int hd = config_.head_dim, heads = n * config_.q_heads;
  s->q.resize(static_cast<size_t>(heads) * hd);
  s->q_gate.resize(s->q.size());
  for (int h = 0; h < heads; ++h) {
    std::copy_n(&both[static_cast<size_t>(h) * 2 * hd], hd, &s->q[static_cast<size_t>(h) * hd]);
    std::copy_n(&both[static_cast<size_t>(h) * 2 * hd + hd], hd,
                &s->q_gate[static_cast<size_t>(h) * hd]);
  }
  return Status::Ok();
}

// The projections, by op id: which weights, from which activations, into
// which. The q latent's RMSNorm runs with q_a_proj (the pricer counts it in
// attn.norm_rope). The DSA indexer's queries are projected from the hidden
// state here, while the model and the program project them from the q
// latent (k = q_lora_rank): the one shape the engine does not yet share.
Status CpuBackend::Projection(const models::ProgramOp& op, int layer, Step* s) {
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, op.id));
  const kernels::GemmWeights& W = w->gemm;
  const int n = static_cast<int>(s->rows.size());
  const std::string& id = op.id;
  if (id == op_ids::kQAProj) {
    CAPPLAN_RETURN_IF_ERROR(RunGemm(W, s->h, n, &s->cq, s));
    const int r = W.n;
    for (int i = 0; i < n; ++i) RmsNormInPlace(&s->cq[i * r], w->norm, r);
    return Status::Ok();
  }
  if (id == op_ids::kQBProj) return RunGemm(W, s->cq, n, &s->q, s);
  if (id == op_ids::kQProj && config_.attention_output_gate) return GatedQueries(*w, n, s);
  if (id == op_ids::kQProj) return RunGemm(W, s->h, n, &s->q, s);
  if (id == op_ids::kKProj) return RunGemm(W, s->h, n, &s->k, s);
  if (id == op_ids::kVProj) return RunGemm(W, s->h, n, &s->v, s);
  if (id == op_ids::kKvAProj) return RunGemm(W, s->h, n, &s->kv, s);
  if (id == op_ids::kIndexerWqB) return RunGemm(W, s->h, n, &s->iq, s);
  if (id == op_ids::kIndexerWk) return RunGemm(W, s->h, n, &s->ik, s);
  if (id == op_ids::kIndexerWeightsProj) return RunGemm(W, s->h, n, &s->iw, s);
  return Status::Internal("CPU backend: no projection " + id);
}

// MLA absorbed W_UK: each head's query moves into the latent space so the
// cache is read once for all heads (MQA form). W_UV, the other half of
// kv_b, maps the attention output back inside MlaAttention.
Status CpuBackend::AbsorbQueries(const models::ProgramOp& op, int layer, Step* s) {
  const SliceConfig& c = config_;
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, op.id));
  const OpWeights& L = *w;
  const int n = static_cast<int>(s->rows.size());
  const int lora = c.kv_lora_rank, nope = c.qk_nope, qk = nope + c.qk_rope;
  s->visit->m = n;
  s->visit->n = static_cast<int64_t>(L.w_uk.size() + L.w_uv.size()) / lora;
  s->visit->k = lora;
  s->q_lat.resize(static_cast<size_t>(n) * c.q_heads * lora);
  for (int i = 0; i < n; ++i) {
    for (int hq = 0; hq < c.q_heads; ++hq) {
      const float* qh = &s->q[(i * c.q_heads + hq) * qk];
      const float* uk = &L.w_uk[static_cast<size_t>(hq) * nope * lora];
      float* ql = &s->q_lat[(static_cast<size_t>(i) * c.q_heads + hq) * lora];
      for (int d = 0; d < lora; ++d) {
        double acc = 0;
        for (int j = 0; j < nope; ++j) acc += static_cast<double>(qh[j]) * uk[j * lora + d];
        ql[d] = RoundToBf16(static_cast<float>(acc));
      }
    }
  }
  return Status::Ok();
}

// MLA: the kv latent's RMSNorm and RoPE on its rope part and on each query
// head's; GQA: RoPE on every query and KV head.
Status CpuBackend::NormRope(const models::ProgramOp& op, int layer, Step* s) {
  const SliceConfig& c = config_;
  const int n = static_cast<int>(s->rows.size());
  s->visit->m = n;
  if (op.id == op_ids::kNormRope) {
    CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, op.id));
    const int lora = c.kv_lora_rank, rope = c.qk_rope, qk = c.qk_nope + rope;
    for (int i = 0; i < n; ++i) {
      const int64_t pos = s->rows[i].position;
      float* row = &s->kv[i * (lora + rope)];
      RmsNormInPlace(row, w->norm, lora);
      Rope(row + lora, rope, pos);
      for (int hq = 0; hq < c.q_heads; ++hq) Rope(&s->q[(i * c.q_heads + hq) * qk + c.qk_nope], rope, pos);
    }
    return Status::Ok();
  }
  if (op.id != op_ids::kRope) return Status::Internal("CPU backend: no elementwise op " + op.id);
  const int hd = c.head_dim, kvw = c.kv_heads * hd;
  for (int i = 0; i < n; ++i) {
    const int64_t pos = s->rows[i].position;
    for (int g = 0; g < c.kv_heads; ++g) Rope(&s->k[i * kvw + g * hd], hd, pos);
    for (int qh = 0; qh < c.q_heads; ++qh) Rope(&s->q[(i * c.q_heads + qh) * hd], hd, pos);
  }
  return Status::Ok();
}

// Each new token's cache entry: GQA K and V (one FP8 scale group per head);
// MLA latent (FP8 when asked), rope (BF16 always, FlashMLA README) and, in
// layers computing a fresh top-k, the indexer key.
Status CpuBackend::KvAppend(const models::ProgramOp&, int layer, Step* s) {
  const SliceConfig& c = config_;
  const int n = static_cast<int>(s->rows.size());
  s->visit->m = n;
  for (int i = 0; i < n; ++i) {
    const StepRequest& r = (*s->batch)[s->rows[i].req];
    const int64_t pos = s->rows[i].position;
    const PageRef& page = (*r.pages)[pos / page_size_];
    float* slot = Slot(layer, page, pos);
    if (c.attention == models::AttentionKind::kGqa) {
      const int hd = c.head_dim, kvw = c.kv_heads * hd;
      for (int g = 0; g < c.kv_heads; ++g) {
        StoreKv(&s->k[i * kvw + g * hd], hd, c.kv_dtype, slot + g * hd);
        StoreKv(&s->v[i * kvw + g * hd], hd, c.kv_dtype, slot + kvw + g * hd);
      }
    } else {
      const int lora = c.kv_lora_rank, rope = c.qk_rope;
      const float* row = &s->kv[i * (lora + rope)];
      StoreKv(row, lora, c.kv_dtype, slot);
      StoreKv(row + lora, rope, models::Dtype::kBf16, slot + lora);
      if (config_.program->program->GroupOf(layer)->index_fresh) {
        StoreKv(&s->ik[i * c.index_head_dim], c.index_head_dim, c.kv_dtype, slot + lora + rope);
      }
    }
    StampPage(s->tags, r.request, static_cast<int32_t>(pos / page_size_), page);
  }
  return Status::Ok();
}

// DSA: score every cached token with the indexer and keep the top-k (ties
// to the earlier position, so selection is deterministic). IndexShare
// layers run no indexer and reuse this selection (same rows, same order).
Status CpuBackend::Indexer(const models::ProgramOp&, int layer, Step* s) {
  const SliceConfig& c = config_;
  const int n = static_cast<int>(s->rows.size());
  const int lora = c.kv_lora_rank, rope = c.qk_rope, idim = c.index_head_dim;
  s->visit->m = n;
  s->visit->heads = c.index_heads;
  s->visit->head_dim = idim;
  shared_sel_.assign(n, {});
  std::vector<double> score;
  for (int i = 0; i < n; ++i) {
    const StepRequest& r = (*s->batch)[s->rows[i].req];
    const int64_t ctx = s->rows[i].position + 1;
    std::vector<int64_t>& sel = shared_sel_[i];
    sel.resize(ctx);
    std::iota(sel.begin(), sel.end(), 0);
    if (ctx <= c.index_topk) continue;
    score.assign(ctx, 0.0);
    for (int64_t t = 0; t < ctx; ++t) {
      const float* key = Entry(layer, *r.pages, t) + lora + rope;
      double acc = 0;
      for (int ih = 0; ih < c.index_heads; ++ih) {
        acc += s->iw[i * c.index_heads + ih] *
               std::max(0.0, Dot(&s->iq[(i * c.index_heads + ih) * idim], key, idim));
      }
      score[t] = acc;
    }
    std::partial_sort(
        sel.begin(), sel.begin() + c.index_topk, sel.end(),
        [&](int64_t a, int64_t b) { return score[a] != score[b] ? score[a] > score[b] : a < b; });
    sel.resize(c.index_topk);
    std::sort(sel.begin(), sel.end());
  }
  return Status::Ok();
}

// GQA decode or prefill: the rows of that form attend over their cache --
// all of it, or in a window-limited layer the last `window` tokens
// (sliding) or those of the row's own chunk (chunked local). gpt-oss's
// attention sinks are not run (the pricer leaves them out too: one logit
// per head beside the keys').
Status CpuBackend::GqaAttention(const models::ProgramOp& op, int layer, Step* s) {
  const SliceConfig& c = config_;
  const int n = static_cast<int>(s->rows.size());
  const int hd = c.head_dim, kvw = c.kv_heads * hd;
  const bool decode = op.kind == models::OpKind::kAttentionDecode;
  s->attn.resize(static_cast<size_t>(n) * c.q_heads * hd);
  s->visit->heads = c.q_heads;
  s->visit->kv_heads = c.kv_heads;
  s->visit->head_dim = hd;
  const int group = c.q_heads / c.kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  std::vector<double> sc;
  for (int i = 0; i < n; ++i) {
    if (s->rows[i].decode != decode) continue;
    ++s->visit->m;
    const StepRequest& r = (*s->batch)[s->rows[i].req];
    const int64_t pos = s->rows[i].position, ctx = pos + 1;
    int64_t lo = 0;
    if (op.window > 0) lo = op.window_chunked ? pos / op.window * op.window
                                              : std::max<int64_t>(0, ctx - op.window);
    for (int qh = 0; qh < c.q_heads; ++qh) {
      const int g = qh / group;
      const float* qv = &s->q[(i * c.q_heads + qh) * hd];
      sc.resize(ctx - lo);
      for (int64_t t = lo; t < ctx; ++t) {
        sc[t - lo] = Dot(qv, Entry(layer, *r.pages, t) + g * hd, hd) * scale;
      }
      Softmax(&sc);
      float* o = &s->attn[(i * c.q_heads + qh) * hd];
      for (int d = 0; d < hd; ++d) {
        double acc = 0;
        for (int64_t t = lo; t < ctx; ++t) {
          acc += sc[t - lo] * Entry(layer, *r.pages, t)[kvw + g * hd + d];
        }
        o[d] = RoundToBf16(static_cast<float>(acc));
      }
    }
  }
  return Status::Ok();
}

// One MLA head of one row in the absorbed form: scores over the selected
// latents, the latent-space output, then W_UV back to the head's values.
void CpuBackend::MlaHead(int layer, const Step& s, int i, int hq, const std::vector<int64_t>& sel,
                         const std::vector<float>& w_uv, float* o) const {
  const SliceConfig& c = config_;
  const int lora = c.kv_lora_rank, rope = c.qk_rope, qk = c.qk_nope + rope;
  const std::vector<PageRef>& pages = *(*s.batch)[s.rows[i].req].pages;
  const float* q_lat = &s.q_lat[(static_cast<size_t>(i) * c.q_heads + hq) * lora];
  const float* q_rope = &s.q[(i * c.q_heads + hq) * qk + c.qk_nope];
  const double scale = 1.0 / std::sqrt(static_cast<double>(qk));
  std::vector<double> sc(sel.size());
  for (size_t j = 0; j < sel.size(); ++j) {
    const float* e = Entry(layer, pages, sel[j]);
    sc[j] = (Dot(q_lat, e, lora) + Dot(q_rope, e + lora, rope)) * scale;
  }
  Softmax(&sc);
  std::vector<float> o_lat(lora);
  for (int d = 0; d < lora; ++d) {
    double acc = 0;
    for (size_t j = 0; j < sel.size(); ++j) acc += sc[j] * Entry(layer, pages, sel[j])[d];
    o_lat[d] = RoundToBf16(static_cast<float>(acc));
  }
  const float* uv = &w_uv[static_cast<size_t>(hq) * lora * c.v_head_dim];
  for (int d = 0; d < c.v_head_dim; ++d) {
    double acc = 0;
    for (int j = 0; j < lora; ++j) acc += static_cast<double>(o_lat[j]) * uv[j * c.v_head_dim + d];
    o[d] = RoundToBf16(static_cast<float>(acc));
  }
}

// MLA decode or (absorbed) prefill: the rows of that form, every head, over
// the DSA selection (the indexer's, or the last fresh layer's) or the whole
// context.
Status CpuBackend::MlaAttention(const models::ProgramOp& op, int layer, Step* s) {
  const SliceConfig& c = config_;
  const int n = static_cast<int>(s->rows.size());
  const bool decode = op.kind == models::OpKind::kMlaDecode;
  const bool dsa = c.index_topk > 0;
  // W_UV, the other half of the absorbed kv_b.
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* kv_b, Weights(layer, op_ids::kKvBProjAbsorbed));
  if (dsa && shared_sel_.size() != static_cast<size_t>(n)) {
    return Status::Internal("CPU backend: IndexShare layer before any fresh indexer layer");
  }
  s->attn.resize(static_cast<size_t>(n) * c.q_heads * c.v_head_dim);
  s->visit->heads = c.q_heads;
  s->visit->kv_heads = 1;
  s->visit->head_dim = c.kv_lora_rank + c.qk_rope;
  std::vector<int64_t> all;
  for (int i = 0; i < n; ++i) {
    if (s->rows[i].decode != decode) continue;
    ++s->visit->m;
    if (!dsa) {
      all.resize(s->rows[i].position + 1);
      std::iota(all.begin(), all.end(), 0);
    }
    const std::vector<int64_t>& sel = dsa ? shared_sel_[i] : all;
    for (int hq = 0; hq < c.q_heads; ++hq) {
      MlaHead(layer, *s, i, hq, sel, kv_b->w_uv, &s->attn[(i * c.q_heads + hq) * c.v_head_dim]);
    }
  }
  return Status::Ok();
}

// On a TP rank o_proj yields a partial sum that an all-reduce completes;
// the slice runs one rank, so the partial is the rank's output.
Status CpuBackend::OutProjection(const models::ProgramOp& op, int layer, Step* s) {
  if (config_.attention_output_gate) {  // attention output x sigmoid(gate)
    for (size_t i = 0; i < s->attn.size(); ++i) {
      s->attn[i] = RoundToBf16(static_cast<float>(s->attn[i] / (1.0 + std::exp(-s->q_gate[i]))));
    }
  }
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, op.id));
  return RunGemm(w->gemm, s->attn, static_cast<int>(s->rows.size()), &s->out, s);
}

}  // namespace capplan::engine
