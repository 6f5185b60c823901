// The CUDA backend's weights and KV caches on the device: the same synthetic
// weights as the CPU backend (MakeSliceWeights), each op's read by its
// (layer, op id), uploaded once by Create.
#include <utility>
#include <vector>

#include "engine/cuda_backend_impl.h"

namespace capplan::engine {

namespace op_ids = models::op_ids;

namespace {

using cuda::DevLinear;

std::vector<uint16_t> Bf16Bits(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = kernels::FloatToBf16Bits(v[i]);
  return out;
}

// An op's weights; empty ones where the layer has no such op.
const OpWeights& Of(const SliceWeights& w, int layer, std::string_view id) {
  static const OpWeights kNone;
  const OpWeights* p = w.Find(layer, id);
  return p != nullptr ? *p : kNone;
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
  CAPPLAN_RETURN_IF_ERROR(embedding.Upload(Bf16Bits(Of(*w, -1, op_ids::kEmbedTokens).embedding)));
  CAPPLAN_RETURN_IF_ERROR(final_norm.Upload(Bf16Bits(Of(*w, c.layers, op_ids::kNormFinal).norm)));
  CAPPLAN_ASSIGN_OR_RETURN(lm_head, UploadLinear(Of(*w, c.layers, op_ids::kLmHead).gemm));
  // Tags start unowned (they match no request), as the host side array.
  CAPPLAN_RETURN_IF_ERROR(tags.Upload(std::vector<kernels::KvPageTag>(
      num_pages, kernels::KvPageTag{kernels::kKvNoRequest, -1, 0})));
  for (int l = 0; l < c.layers; ++l) {
    CAPPLAN_RETURN_IF_ERROR(UploadLayer(l, w, max_tokens));
    w->ReleaseLayer(l);  // host copies are no longer needed
  }
  return Status::Ok();
}

// The layer's FFN as one MoeCuda: its routed experts, router and shared
// experts, or the dense MLP as one expert.
Status CudaBackend::Impl::UploadFfn(int l, SliceWeights* w, int max_tokens, DevLayer* d) {
  // Layers run one after another on one stream: one set of FFN
  // intermediates serves them all.
  const kernels::MoeCuda* scratch_donor = l > 0 ? layers[0].ffn.get() : nullptr;
  d->moe = c.program->program->GroupOf(l)->moe;
  if (!d->moe) {
    OpWeights* dense = w->Find(l, op_ids::kDenseGateUpProj);
    if (dense == nullptr || dense->mlps.size() != 1) {
      return Status::Internal("CUDA backend: layer " + std::to_string(l) + " has no dense MLP");
    }
    kernels::MoeWeights one;
    one.hidden = c.hidden;
    one.intermediate = dense->mlps[0].down.k;
    one.experts.push_back(std::move(dense->mlps[0]));
    CAPPLAN_ASSIGN_OR_RETURN(d->ffn, kernels::MoeCuda::Create(one, max_tokens, 1, scratch_donor));
    return Status::Ok();
  }
  OpWeights* experts = w->Find(l, op_ids::kMoeExperts);
  const OpWeights& gate = Of(*w, l, op_ids::kMoeGate);
  if (experts == nullptr) return Status::Internal("CUDA backend: MoE layer without experts");
  kernels::MoeWeights moe = std::move(experts->experts);
  moe.router = gate.router;
  if (OpWeights* shared = w->Find(l, op_ids::kSharedGateUpProj))
    moe.shared = std::move(shared->mlps);
  CAPPLAN_ASSIGN_OR_RETURN(d->ffn,
                           kernels::MoeCuda::Create(moe, max_tokens, c.top_k, scratch_donor));
  CAPPLAN_RETURN_IF_ERROR(d->router.Upload(gate.router));
  d->router_config = gate.router_config;
  return Status::Ok();
}

Status CudaBackend::Impl::UploadLayer(int l, SliceWeights* w, int max_tokens) {
  DevLayer d;
  auto norm = [&](std::string_view id) { return Bf16Bits(Of(*w, l, id).norm); };
  auto linear = [&](std::string_view id) { return UploadLinear(Of(*w, l, id).gemm); };
  const OpWeights& kv_b = Of(*w, l, op_ids::kKvBProjAbsorbed);
  CAPPLAN_RETURN_IF_ERROR(d.attn_norm.Upload(norm(op_ids::kNormInput)));
  CAPPLAN_RETURN_IF_ERROR(d.ffn_norm.Upload(norm(op_ids::kNormPostAttention)));
  CAPPLAN_RETURN_IF_ERROR(d.q_a_norm.Upload(norm(op_ids::kQAProj)));
  CAPPLAN_RETURN_IF_ERROR(d.kv_a_norm.Upload(norm(op_ids::kNormRope)));
  CAPPLAN_RETURN_IF_ERROR(d.w_uk.Upload(Bf16Bits(kv_b.w_uk)));
  CAPPLAN_RETURN_IF_ERROR(d.w_uv.Upload(Bf16Bits(kv_b.w_uv)));
  CAPPLAN_ASSIGN_OR_RETURN(d.wq, linear(op_ids::kQProj));
  CAPPLAN_ASSIGN_OR_RETURN(d.wk, linear(op_ids::kKProj));
  CAPPLAN_ASSIGN_OR_RETURN(d.wv, linear(op_ids::kVProj));
  CAPPLAN_ASSIGN_OR_RETURN(d.wo, linear(op_ids::kOProj));
  CAPPLAN_ASSIGN_OR_RETURN(d.wq_a, linear(op_ids::kQAProj));
  CAPPLAN_ASSIGN_OR_RETURN(d.wq_b, linear(op_ids::kQBProj));
  CAPPLAN_ASSIGN_OR_RETURN(d.wkv_a, linear(op_ids::kKvAProj));
  CAPPLAN_ASSIGN_OR_RETURN(d.wi_q, linear(op_ids::kIndexerWqB));
  CAPPLAN_ASSIGN_OR_RETURN(d.wi_k, linear(op_ids::kIndexerWk));
  CAPPLAN_ASSIGN_OR_RETURN(d.wi_w, linear(op_ids::kIndexerWeightsProj));
  CAPPLAN_RETURN_IF_ERROR(UploadFfn(l, w, max_tokens, &d));
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
  if (mla && c.program->program->GroupOf(l)->index_fresh) {
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
