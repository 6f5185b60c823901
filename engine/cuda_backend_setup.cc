// The CUDA backend's weights and KV caches on the device: the same synthetic
// weights as the CPU backend (MakeSliceWeights), uploaded once by Create.
#include <utility>
#include <vector>

#include "engine/cuda_backend_impl.h"

namespace capplan::engine {
namespace {

using cuda::DevLinear;

std::vector<uint16_t> Bf16Bits(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = kernels::FloatToBf16Bits(v[i]);
  return out;
}

Result<DevLinear> UploadLinear(const kernels::GemmWeights& w) {
  DevLinear d;
  if (w.n == 0) return d;  // absent in this architecture
  CAPPLAN_ASSIGN_OR_RETURN(d.set, kernels::UploadWeightSet({&w}));
  d.present = true;
  return d;
}

}  // namespace

Status CudaBackend::Impl::UploadWeights(SliceWeights* w, int max_tokens) {
  CAPPLAN_RETURN_IF_ERROR(embedding.Upload(Bf16Bits(w->embedding)));
  CAPPLAN_RETURN_IF_ERROR(final_norm.Upload(Bf16Bits(w->final_norm)));
  CAPPLAN_ASSIGN_OR_RETURN(lm_head, UploadLinear(w->lm_head));
  // Tags start unowned (they match no request), as the host side array.
  CAPPLAN_RETURN_IF_ERROR(tags.Upload(std::vector<kernels::KvPageTag>(
      num_pages, kernels::KvPageTag{kernels::kKvNoRequest, -1, 0})));
  for (int l = 0; l < c.layers; ++l) {
    CAPPLAN_RETURN_IF_ERROR(UploadLayer(l, &w->layers[l], max_tokens));
  }
  return Status::Ok();
}

Status CudaBackend::Impl::UploadLayer(int l, SliceLayerWeights* L, int max_tokens) {
  DevLayer d;
  // Layers run one after another on one stream: one set of FFN
  // intermediates serves them all.
  const kernels::MoeCuda* scratch_donor = l > 0 ? layers[0].ffn.get() : nullptr;
  CAPPLAN_RETURN_IF_ERROR(d.attn_norm.Upload(Bf16Bits(L->attn_norm)));
  CAPPLAN_RETURN_IF_ERROR(d.ffn_norm.Upload(Bf16Bits(L->ffn_norm)));
  CAPPLAN_RETURN_IF_ERROR(d.q_a_norm.Upload(Bf16Bits(L->q_a_norm)));
  CAPPLAN_RETURN_IF_ERROR(d.kv_a_norm.Upload(Bf16Bits(L->kv_a_norm)));
  CAPPLAN_RETURN_IF_ERROR(d.w_uk.Upload(Bf16Bits(L->w_uk)));
  CAPPLAN_RETURN_IF_ERROR(d.w_uv.Upload(Bf16Bits(L->w_uv)));
  CAPPLAN_ASSIGN_OR_RETURN(d.wq, UploadLinear(L->wq));
  CAPPLAN_ASSIGN_OR_RETURN(d.wk, UploadLinear(L->wk));
  CAPPLAN_ASSIGN_OR_RETURN(d.wv, UploadLinear(L->wv));
  CAPPLAN_ASSIGN_OR_RETURN(d.wo, UploadLinear(L->wo));
  CAPPLAN_ASSIGN_OR_RETURN(d.wq_a, UploadLinear(L->wq_a));
  CAPPLAN_ASSIGN_OR_RETURN(d.wq_b, UploadLinear(L->wq_b));
  CAPPLAN_ASSIGN_OR_RETURN(d.wkv_a, UploadLinear(L->wkv_a));
  CAPPLAN_ASSIGN_OR_RETURN(d.wi_q, UploadLinear(L->wi_q));
  CAPPLAN_ASSIGN_OR_RETURN(d.wi_k, UploadLinear(L->wi_k));
  CAPPLAN_ASSIGN_OR_RETURN(d.wi_w, UploadLinear(L->wi_w));
  d.moe = L->moe;
  if (L->moe) {
    CAPPLAN_ASSIGN_OR_RETURN(
        d.ffn, kernels::MoeCuda::Create(L->experts, max_tokens, c.top_k, scratch_donor));
    CAPPLAN_RETURN_IF_ERROR(d.router.Upload(L->experts.router));
    d.router_config = L->router;
  } else {
    kernels::MoeWeights one;
    one.hidden = c.hidden;
    one.intermediate = c.dense_intermediate;
    one.experts.push_back(L->dense);
    CAPPLAN_ASSIGN_OR_RETURN(d.ffn, kernels::MoeCuda::Create(one, max_tokens, 1, scratch_donor));
  }
  *L = SliceLayerWeights();  // host copies are no longer needed
  CAPPLAN_RETURN_IF_ERROR(AllocateLayerCache(l, &d));
  layers.push_back(std::move(d));
  return Status::Ok();
}

// KV cache of the layer; 0xff everywhere is NaN in BF16 and e4m3, so the
// poison page (and any never-written slot) poisons whatever reads it.
Status CudaBackend::Impl::AllocateLayerCache(int l, DevLayer* d) {
  const bool mla = c.attention != models::AttentionKind::kGqa;
  const kernels::KvDtype kvd =
      c.kv_dtype == models::Dtype::kFp8E4m3 ? kernels::KvDtype::kFp8 : kernels::KvDtype::kBf16;
  kernels::PagedKvLayout lay;
  lay.num_pages = num_pages;
  lay.page_size = page_size;
  lay.dtype = kvd;
  if (mla) {
    lay.kv_heads = 1;
    lay.k_dim = c.kv_lora_rank + c.qk_rope;
    lay.v_dim = 0;
  } else {
    lay.kv_heads = c.kv_heads;
    lay.k_dim = c.head_dim;
    lay.v_dim = c.head_dim;
  }
  const size_t eb = kernels::KvElemBytes(kvd);
  CAPPLAN_RETURN_IF_ERROR(d->k.Allocate(lay.KElems() * eb));
  CAPPLAN_RETURN_IF_ERROR(d->k.Poison());
  if (lay.v_dim > 0) {
    CAPPLAN_RETURN_IF_ERROR(d->v.Allocate(lay.VElems() * eb));
    CAPPLAN_RETURN_IF_ERROR(d->v.Poison());
  }
  d->cache =
      kernels::PagedKvDevice{lay,        d->k.get(),        lay.v_dim > 0 ? d->v.get() : nullptr,
                             tags.get(), cuda::kFp8KvScale, cuda::kFp8KvScale};
  if (mla && c.IndexFresh(l)) {
    // The DSA indexer's key: one more paged array with the KV cache's
    // dtype (the CPU backend stores it beside the latent, same rounding).
    kernels::PagedKvLayout il = lay;
    il.k_dim = c.index_head_dim;
    il.v_dim = 0;
    CAPPLAN_RETURN_IF_ERROR(d->index_keys.Allocate(il.KElems() * eb));
    CAPPLAN_RETURN_IF_ERROR(d->index_keys.Poison());
    d->index_cache = kernels::PagedKvDevice{il,         d->index_keys.get(), nullptr,
                                            tags.get(), cuda::kFp8KvScale,   cuda::kFp8KvScale};
  }
  return Status::Ok();
}

}  // namespace capplan::engine
