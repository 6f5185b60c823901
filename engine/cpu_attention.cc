// Attention of the CPU backend: append this step's K/V (or MLA latent) into
// the paged cache, stamp page tags, then attend through the page tables.
// All appends of a step happen before any read, as in an engine where the
// append kernel precedes the attention kernel of the same layer.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/cpu_backend.h"
#include "engine/slice_math.h"
#include "kernels/formats/bf16.h"
#include "kernels/formats/fp8.h"

namespace capplan::engine {
namespace {

using kernels::RoundToBf16;
using slice_math::Dot;
using slice_math::Gemm;
using slice_math::Rope;
using slice_math::Softmax;
using slice_math::StoreKv;

void RmsNormInPlace(float* x, const std::vector<float>& w, int n) {
  slice_math::RmsNorm(x, w, n, x);  // reads x[i] before writing it
}

}  // namespace

Status CpuBackend::GqaAttention(int layer, const std::vector<StepRequest>& batch,
                                const std::vector<Row>& rows, const std::vector<float>& h,
                                PageTags* tags, std::vector<float>* attn) {
  const SliceConfig& c = config_;
  const SliceLayerWeights& L = w_.layers[layer];
  const int n = static_cast<int>(rows.size());
  const int hd = c.head_dim, kvw = c.kv_heads * hd;
  CAPPLAN_ASSIGN_OR_RETURN(std::vector<float> q, Gemm(L.wq, h, n));
  CAPPLAN_ASSIGN_OR_RETURN(std::vector<float> k, Gemm(L.wk, h, n));
  CAPPLAN_ASSIGN_OR_RETURN(std::vector<float> v, Gemm(L.wv, h, n));
  for (int i = 0; i < n; ++i) {
    const StepRequest& r = batch[rows[i].req];
    const int64_t pos = rows[i].position;
    for (int g = 0; g < c.kv_heads; ++g) Rope(&k[i * kvw + g * hd], hd, pos);
    for (int qh = 0; qh < c.q_heads; ++qh) Rope(&q[(i * c.q_heads + qh) * hd], hd, pos);
    const PageRef& page = (*r.pages)[pos / page_size_];
    float* slot = Slot(layer, page, pos);
    for (int g = 0; g < c.kv_heads; ++g) {  // one FP8 scale group per head
      StoreKv(&k[i * kvw + g * hd], hd, c.kv_dtype, slot + g * hd);
      StoreKv(&v[i * kvw + g * hd], hd, c.kv_dtype, slot + kvw + g * hd);
    }
    StampPage(tags, r.request, static_cast<int32_t>(pos / page_size_), page);
  }
  attn->assign(static_cast<size_t>(n) * c.q_heads * hd, 0.0f);
  const int group = c.q_heads / c.kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  std::vector<double> s;
  for (int i = 0; i < n; ++i) {
    const StepRequest& r = batch[rows[i].req];
    const int64_t ctx = rows[i].position + 1;
    for (int qh = 0; qh < c.q_heads; ++qh) {
      const int g = qh / group;
      const float* qv = &q[(i * c.q_heads + qh) * hd];
      s.resize(ctx);
      for (int64_t t = 0; t < ctx; ++t) {
        s[t] = Dot(qv, Entry(layer, *r.pages, t) + g * hd, hd) * scale;
      }
      Softmax(&s);
      float* o = &(*attn)[(i * c.q_heads + qh) * hd];
      for (int d = 0; d < hd; ++d) {
        double acc = 0;
        for (int64_t t = 0; t < ctx; ++t) acc += s[t] * Entry(layer, *r.pages, t)[kvw + g * hd + d];
        o[d] = RoundToBf16(static_cast<float>(acc));
      }
    }
  }
  return Status::Ok();
}

Status CpuBackend::MlaAttention(int layer, const std::vector<StepRequest>& batch,
                                const std::vector<Row>& rows, const std::vector<float>& h,
                                PageTags* tags, std::vector<float>* attn) {
  const SliceConfig& c = config_;
  const SliceLayerWeights& L = w_.layers[layer];
  const int n = static_cast<int>(rows.size());
  const int lora = c.kv_lora_rank, rope = c.qk_rope, nope = c.qk_nope, qk = nope + rope;
  const int idim = c.index_head_dim;
  const bool dsa = c.index_topk > 0;
  // IndexShare: only "fresh" layers run the indexer; the others reuse the
  // selection of the last fresh layer of this step (same rows, same order).
  const bool fresh = c.IndexFresh(layer);
  std::vector<float> q;
  if (c.q_lora_rank > 0) {
    CAPPLAN_ASSIGN_OR_RETURN(std::vector<float> cq, Gemm(L.wq_a, h, n));
    for (int i = 0; i < n; ++i) RmsNormInPlace(&cq[i * c.q_lora_rank], L.q_a_norm, c.q_lora_rank);
    CAPPLAN_ASSIGN_OR_RETURN(q, Gemm(L.wq_b, cq, n));
  } else {
    CAPPLAN_ASSIGN_OR_RETURN(q, Gemm(L.wq, h, n));
  }
  CAPPLAN_ASSIGN_OR_RETURN(std::vector<float> kv, Gemm(L.wkv_a, h, n));
  std::vector<float> iq, ik, iw;
  if (fresh) {
    CAPPLAN_ASSIGN_OR_RETURN(iq, Gemm(L.wi_q, h, n));
    CAPPLAN_ASSIGN_OR_RETURN(ik, Gemm(L.wi_k, h, n));
    CAPPLAN_ASSIGN_OR_RETURN(iw, Gemm(L.wi_w, h, n));
  }
  for (int i = 0; i < n; ++i) {
    const StepRequest& r = batch[rows[i].req];
    const int64_t pos = rows[i].position;
    float* row = &kv[i * (lora + rope)];
    RmsNormInPlace(row, L.kv_a_norm, lora);
    Rope(row + lora, rope, pos);
    const PageRef& page = (*r.pages)[pos / page_size_];
    float* slot = Slot(layer, page, pos);
    StoreKv(row, lora, c.kv_dtype, slot);                  // latent: FP8 when asked
    StoreKv(row + lora, rope, models::Dtype::kBf16,
            slot + lora);  // rope stays BF16 (FlashMLA README)
    if (fresh) StoreKv(&ik[i * idim], idim, c.kv_dtype, slot + lora + rope);
    StampPage(tags, r.request, static_cast<int32_t>(pos / page_size_), page);
  }
  attn->assign(static_cast<size_t>(n) * c.q_heads * c.v_head_dim, 0.0f);
  const double scale = 1.0 / std::sqrt(static_cast<double>(qk));
  std::vector<int64_t> sel;
  std::vector<double> s, score;
  std::vector<float> q_lat(lora), q_rope(rope), o_lat(lora);
  if (fresh) shared_sel_.assign(n, {});
  for (int i = 0; i < n; ++i) {
    const StepRequest& r = batch[rows[i].req];
    const int64_t ctx = rows[i].position + 1;
    sel.resize(ctx);
    std::iota(sel.begin(), sel.end(), 0);
    if (dsa && !fresh) {
      if (shared_sel_.size() != static_cast<size_t>(n)) {
        return Status::Internal("CPU backend: IndexShare layer before any fresh indexer layer");
      }
      sel = shared_sel_[i];
    } else if (dsa && ctx > c.index_topk) {
      // DSA: score every cached token with the indexer, keep the top-k
      // (ties to the earlier position, so selection is deterministic).
      score.assign(ctx, 0.0);
      for (int64_t t = 0; t < ctx; ++t) {
        const float* key = Entry(layer, *r.pages, t) + lora + rope;
        double acc = 0;
        for (int ih = 0; ih < c.index_heads; ++ih) {
          acc += iw[i * c.index_heads + ih] *
                 std::max(0.0, Dot(&iq[(i * c.index_heads + ih) * idim], key, idim));
        }
        score[t] = acc;
      }
      std::partial_sort(
          sel.begin(), sel.begin() + c.index_topk, sel.end(),
          [&](int64_t a, int64_t b) { return score[a] != score[b] ? score[a] > score[b] : a < b; });
      sel.resize(c.index_topk);
      std::sort(sel.begin(), sel.end());
    }
    if (fresh) shared_sel_[i] = sel;
    for (int hq = 0; hq < c.q_heads; ++hq) {
      const float* qh = &q[(i * c.q_heads + hq) * qk];
      for (int d = 0; d < rope; ++d) q_rope[d] = qh[nope + d];
      Rope(q_rope.data(), rope, rows[i].position);
      // Absorb W_UK: the query moves into latent space so the cache is read
      // once for all heads (MQA form).
      const float* uk = &L.w_uk[static_cast<size_t>(hq) * nope * lora];
      for (int d = 0; d < lora; ++d) {
        double acc = 0;
        for (int j = 0; j < nope; ++j) acc += static_cast<double>(qh[j]) * uk[j * lora + d];
        q_lat[d] = RoundToBf16(static_cast<float>(acc));
      }
      s.resize(sel.size());
      for (size_t j = 0; j < sel.size(); ++j) {
        const float* e = Entry(layer, *r.pages, sel[j]);
        s[j] = (Dot(q_lat.data(), e, lora) + Dot(q_rope.data(), e + lora, rope)) * scale;
      }
      Softmax(&s);
      for (int d = 0; d < lora; ++d) {
        double acc = 0;
        for (size_t j = 0; j < sel.size(); ++j) acc += s[j] * Entry(layer, *r.pages, sel[j])[d];
        o_lat[d] = RoundToBf16(static_cast<float>(acc));
      }
      const float* uv = &L.w_uv[static_cast<size_t>(hq) * lora * c.v_head_dim];
      float* o = &(*attn)[(i * c.q_heads + hq) * c.v_head_dim];
      for (int d = 0; d < c.v_head_dim; ++d) {
        double acc = 0;
        for (int j = 0; j < lora; ++j)
          acc += static_cast<double>(o_lat[j]) * uv[j * c.v_head_dim + d];
        o[d] = RoundToBf16(static_cast<float>(acc));
      }
    }
  }
  return Status::Ok();
}

}  // namespace capplan::engine
