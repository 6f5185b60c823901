// Synthetic weights for the model slice. Values are uniform in
// [-1, 1) / sqrt(fan_in) so activations stay O(1) through the layers; norm
// weights are 1 +- 0.1. They say nothing about the real checkpoint: the
// slice exists to run the real shapes and formats, not the real model.
#include <cmath>

#include "engine/cpu_backend.h"
#include "engine/splitmix.h"
#include "kernels/formats/bf16.h"

namespace capplan {
namespace {

using kernels::GemmWeightFormat;
using kernels::GemmWeights;

class WeightRng {
 public:
  explicit WeightRng(uint64_t seed) : state_(seed) {}
  // Uniform in [-1, 1).
  float Next() {
    const uint64_t r = NextRandom(&state_);
    return static_cast<float>(static_cast<double>(r >> 11) * 0x1.0p-52 - 1.0);
  }
  std::vector<float> Matrix(int rows, int cols) {
    std::vector<float> m(static_cast<size_t>(rows) * cols);
    const float s = 1.0f / std::sqrt(static_cast<float>(cols));
    for (float& v : m) v = Next() * s;
    return m;
  }
  std::vector<float> Bf16Matrix(int rows, int cols, float gain = 1.0f) {
    std::vector<float> m = Matrix(rows, cols);
    for (float& v : m) v = kernels::RoundToBf16(v * gain);
    return m;
  }
  std::vector<float> Norm(int n) {
    std::vector<float> v(n);
    for (float& x : v) x = kernels::RoundToBf16(1.0f + 0.1f * Next());
    return v;
  }

 private:
  uint64_t state_;
};

Result<GemmWeights> Linear(WeightRng* rng, int n, int k, GemmWeightFormat f, int group) {
  const std::vector<float> m = rng->Matrix(n, k);
  return kernels::QuantizeGemmWeights(m.data(), n, k, f, group, /*symmetric=*/true);
}

Result<kernels::MoeExpertWeights> Mlp(WeightRng* rng, int hidden, int inter, GemmWeightFormat f,
                                      int group) {
  kernels::MoeExpertWeights e;
  CAPPLAN_ASSIGN_OR_RETURN(e.gate_up, Linear(rng, 2 * inter, hidden, f, group));
  CAPPLAN_ASSIGN_OR_RETURN(e.down, Linear(rng, hidden, inter, f, group));
  return e;
}

}  // namespace

Result<SliceWeights> MakeSliceWeights(const SliceConfig& c) {
  SliceWeights w;
  WeightRng rng(c.seed);
  const GemmWeightFormat bf16 = GemmWeightFormat::kBf16;
  const int g = c.int4_group;
  // Embedding rows are O(1); RMSNorm makes the scale irrelevant anyway.
  w.embedding = rng.Bf16Matrix(c.vocab, c.hidden, std::sqrt(static_cast<float>(c.hidden)));
  for (int l = 0; l < c.layers; ++l) {
    // A fresh stream per layer, so adding layers does not change earlier ones.
    WeightRng lr(c.seed * 1000003ull + static_cast<uint64_t>(l) + 1);
    SliceLayerWeights L;
    L.attn_norm = lr.Norm(c.hidden);
    L.ffn_norm = lr.Norm(c.hidden);
    const GemmWeightFormat af = c.attention_format;
    if (c.attention == AttentionKind::kGqa) {
      CAPPLAN_ASSIGN_OR_RETURN(L.wq, Linear(&lr, c.q_heads * c.head_dim, c.hidden, af, g));
      CAPPLAN_ASSIGN_OR_RETURN(L.wk, Linear(&lr, c.kv_heads * c.head_dim, c.hidden, af, g));
      CAPPLAN_ASSIGN_OR_RETURN(L.wv, Linear(&lr, c.kv_heads * c.head_dim, c.hidden, af, g));
      CAPPLAN_ASSIGN_OR_RETURN(L.wo, Linear(&lr, c.hidden, c.q_heads * c.head_dim, af, g));
    } else {
      const int qk = c.qk_nope + c.qk_rope;
      if (c.q_lora_rank > 0) {
        CAPPLAN_ASSIGN_OR_RETURN(L.wq_a, Linear(&lr, c.q_lora_rank, c.hidden, af, g));
        L.q_a_norm = lr.Norm(c.q_lora_rank);
        CAPPLAN_ASSIGN_OR_RETURN(L.wq_b, Linear(&lr, c.q_heads * qk, c.q_lora_rank, af, g));
      } else {
        CAPPLAN_ASSIGN_OR_RETURN(L.wq, Linear(&lr, c.q_heads * qk, c.hidden, af, g));
      }
      CAPPLAN_ASSIGN_OR_RETURN(L.wkv_a,
                               Linear(&lr, c.kv_lora_rank + c.qk_rope, c.hidden, af, g));
      L.kv_a_norm = lr.Norm(c.kv_lora_rank);
      // Absorbed W_UK / W_UV stay BF16: engines fold them into the attention
      // kernels' BF16 MMAs (FlashMLA's absorbed form, kernels.md 1.2).
      L.w_uk = lr.Bf16Matrix(c.q_heads * c.qk_nope, c.kv_lora_rank);
      L.w_uv = lr.Bf16Matrix(c.q_heads * c.kv_lora_rank, c.v_head_dim);
      CAPPLAN_ASSIGN_OR_RETURN(L.wo, Linear(&lr, c.hidden, c.q_heads * c.v_head_dim, af, g));
      if (c.index_topk > 0) {
        CAPPLAN_ASSIGN_OR_RETURN(
            L.wi_q, Linear(&lr, c.index_heads * c.index_head_dim, c.hidden, bf16, g));
        CAPPLAN_ASSIGN_OR_RETURN(L.wi_k, Linear(&lr, c.index_head_dim, c.hidden, bf16, g));
        CAPPLAN_ASSIGN_OR_RETURN(L.wi_w, Linear(&lr, c.index_heads, c.hidden, bf16, g));
      }
    }
    L.moe = c.IsMoeLayer(l);
    if (!L.moe) {
      CAPPLAN_ASSIGN_OR_RETURN(L.dense,
                               Mlp(&lr, c.hidden, c.dense_intermediate, c.dense_ffn_format, g));
    } else {
      kernels::MoeWeights& m = L.experts;
      m.hidden = c.hidden;
      m.intermediate = c.moe_intermediate;
      m.router = lr.Matrix(c.n_experts, c.hidden);  // FP32 router (moe_cpu.h)
      for (int e = 0; e < c.n_experts; ++e) {
        CAPPLAN_ASSIGN_OR_RETURN(auto ew,
                                 Mlp(&lr, c.hidden, c.moe_intermediate, c.experts_format, g));
        m.experts.push_back(std::move(ew));
      }
      for (int e = 0; e < c.n_shared; ++e) {
        CAPPLAN_ASSIGN_OR_RETURN(auto sw,
                                 Mlp(&lr, c.hidden, c.moe_intermediate, c.shared_format, g));
        m.shared.push_back(std::move(sw));
      }
      L.router.num_experts = c.n_experts;
      L.router.top_k = c.top_k;
      CAPPLAN_ASSIGN_OR_RETURN(L.router.scoring, kernels::ParseMoeScoring(c.scoring));
      L.router.renormalize = true;
      L.router.routed_scaling_factor = c.routed_scaling;
    }
    w.layers.push_back(std::move(L));
  }
  w.final_norm = rng.Norm(c.hidden);
  CAPPLAN_ASSIGN_OR_RETURN(w.lm_head, Linear(&rng, c.vocab, c.hidden, bf16, g));
  return w;
}

}  // namespace capplan
