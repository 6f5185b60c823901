// Synthetic weights for the model slice. Values are uniform in
// [-1, 1) / sqrt(fan_in) so activations stay O(1) through the layers; norm
// weights are 1 +- 0.1. They say nothing about the real checkpoint: the
// slice exists to run the real shapes and formats, not the real model.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "engine/cpu_backend.h"
#include "engine/splitmix.h"
#include "kernels/formats/bf16.h"

namespace capplan::engine {
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

// The routed experts of one MoE layer. Each expert draws from its own stream
// so they can be generated in parallel: a full-dims Kimi K2.6 TP8 layer has
// 384 experts x 3 x 7168 x 256 values (2.1 G), minutes on one core, seconds
// on a device machine's 16.
Status MakeExperts(uint64_t layer_seed, const SliceConfig& c,
                   std::vector<kernels::MoeExpertWeights>* out) {
  out->assign(c.n_experts, {});
  std::vector<Status> status(c.n_experts, Status::Ok());
  std::atomic<int> next{0};
  auto work = [&] {
    for (int e = next++; e < c.n_experts; e = next++) {
      WeightRng er(layer_seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(e) + 1);
      auto w = Mlp(&er, c.hidden, c.moe_intermediate, c.experts_format, c.int4_group);
      if (w.ok()) {
        (*out)[e] = std::move(*w);
      } else {
        status[e] = w.status();
      }
    }
  };
  const double values = 3.0 * c.hidden * c.moe_intermediate * c.n_experts;
  // Small slices (tests) stay on the calling thread.
  const int threads =
      values < 5e7
          ? 1
          : std::max(1, std::min<int>(c.n_experts,
                                      static_cast<int>(std::thread::hardware_concurrency())));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const Status& st : status) CAPPLAN_RETURN_IF_ERROR(st);
  return Status::Ok();
}

// A linear layer's Gated DeltaNet weights. A_log and dt_bias are drawn so
// the per-token decay exp(g) stays in (0, 1) away from both ends.
Status MakeLinearWeights(WeightRng* lr, const SliceConfig& c, SliceLayerWeights* L) {
  const GemmWeightFormat af = c.attention_format;
  const int g = c.int4_group, vh = c.linear_value_heads, vd = c.linear_value_dim;
  const int qkvz = 2 * c.linear_key_heads * c.linear_key_dim + 2 * vh * vd;
  CAPPLAN_ASSIGN_OR_RETURN(L->w_qkvz, Linear(lr, qkvz, c.hidden, af, g));
  CAPPLAN_ASSIGN_OR_RETURN(L->w_ba, Linear(lr, 2 * vh, c.hidden, af, g));
  L->conv = lr->Bf16Matrix(c.LinearConvDim(), c.linear_conv_kernel);
  for (int h = 0; h < vh; ++h) {
    L->a_log.push_back(kernels::RoundToBf16(-1.0f + 0.5f * lr->Next()));
    L->dt_bias.push_back(kernels::RoundToBf16(0.5f * lr->Next()));
  }
  L->gate_norm = lr->Norm(vd);
  CAPPLAN_ASSIGN_OR_RETURN(L->w_out, Linear(lr, c.hidden, vh * vd, af, g));
  return Status::Ok();
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
    const uint64_t layer_seed = c.seed * 1000003ull + static_cast<uint64_t>(l) + 1;
    WeightRng lr(layer_seed);
    SliceLayerWeights L;
    L.attn_norm = lr.Norm(c.hidden);
    L.ffn_norm = lr.Norm(c.hidden);
    const GemmWeightFormat af = c.attention_format;
    if (c.IsLinearLayer(l)) {
      CAPPLAN_RETURN_IF_ERROR(MakeLinearWeights(&lr, c, &L));
    } else if (c.attention == models::AttentionKind::kGqa) {
      const int q_width = c.q_heads * c.head_dim * (c.attention_output_gate ? 2 : 1);
      CAPPLAN_ASSIGN_OR_RETURN(L.wq, Linear(&lr, q_width, c.hidden, af, g));
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
      CAPPLAN_ASSIGN_OR_RETURN(L.wkv_a, Linear(&lr, c.kv_lora_rank + c.qk_rope, c.hidden, af, g));
      L.kv_a_norm = lr.Norm(c.kv_lora_rank);
      // Absorbed W_UK / W_UV stay BF16: engines fold them into the attention
      // kernels' BF16 MMAs (FlashMLA's absorbed "MQA mode", deepseek-ai/FlashMLA
      // README.md).
      L.w_uk = lr.Bf16Matrix(c.q_heads * c.qk_nope, c.kv_lora_rank);
      L.w_uv = lr.Bf16Matrix(c.q_heads * c.kv_lora_rank, c.v_head_dim);
      CAPPLAN_ASSIGN_OR_RETURN(L.wo, Linear(&lr, c.hidden, c.q_heads * c.v_head_dim, af, g));
      if (c.IndexFresh(l)) {  // IndexShare layers reuse an earlier top-k
        CAPPLAN_ASSIGN_OR_RETURN(L.wi_q,
                                 Linear(&lr, c.index_heads * c.index_head_dim, c.hidden, bf16, g));
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
      CAPPLAN_RETURN_IF_ERROR(MakeExperts(layer_seed, c, &m.experts));
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

}  // namespace capplan::engine
