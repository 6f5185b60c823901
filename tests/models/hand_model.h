// Hand arithmetic for the shipped cards, written from the models' published
// configs and the engines' public memory rules independently of models/:
// the tests compare the library against these numbers, never against itself.
#ifndef CAPPLAN_TESTS_MODELS_HAND_MODEL_H_
#define CAPPLAN_TESTS_MODELS_HAND_MODEL_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace capplan::models::hand {

// Stored weight format: bytes per value and how scales are laid out.
struct Fmt {
  double value_bytes = 2;  // bf16
  int block = 0;           // fp8 128x128 block scales (fp32)
  int group = 0;           // int4 group along k (bf16 scale)
};
inline const Fmt kBf16{2, 0, 0};
inline const Fmt kFp8{1, 128, 0};
inline const Fmt kInt4G32{0.5, 0, 32};
inline const Fmt kInt4G128{0.5, 0, 128};

inline int64_t Cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Bytes of one n x k weight (values + scales).
inline double W(int64_t n, int64_t k, const Fmt& f) {
  double b = n * k * f.value_bytes;
  if (f.block > 0) b += Cdiv(n, f.block) * Cdiv(k, f.block) * 4.0;
  if (f.group > 0) b += n * Cdiv(k, f.group) * 2.0;
  return b;
}

struct Dims {
  std::string name;
  int64_t L, h, vocab, heads;
  bool mla;
  int64_t q_lora, kv_lora, nope, rope, v;  // MLA
  int64_t idx_heads, idx_dim;              // DSA
  int64_t kv_heads, head_dim;              // GQA
  int64_t inter, dense_layers;             // dense FFN
  int64_t experts, topk, shared, moe_inter;
  bool sigmoid;
  int64_t max_pos;
  Fmt attn, experts_fmt, shared_fmt, dense_fmt;  // checkpoint formats
  bool qk_norm = false;                          // Qwen3 q_norm/k_norm (head_dim each)
};

// The models' published configs, and the checkpoint precision each card documents.
inline std::vector<Dims> AllDims() {
  return {
      {"deepseek-v3", 61, 7168, 129280, 128, true, 1536, 512, 128, 64, 128, 0, 0, 0, 0, 18432, 3,
       256, 8, 1, 2048, true, 163840, kFp8, kFp8, kFp8, kFp8},
      {"glm-4.6", 92, 5120, 151552, 96, false, 0, 0, 0, 0, 0, 0, 0, 8, 128, 12288, 3, 160, 8, 1,
       1536, true, 202752, kBf16, kBf16, kBf16, kBf16},
      {"glm-5.2", 78, 6144, 154880, 64, true, 2048, 512, 192, 64, 256, 32, 128, 0, 0, 12288, 3,
       256, 8, 1, 2048, true, 1048576, kBf16, kBf16, kBf16, kBf16},
      {"kimi-k2.6", 61, 7168, 163840, 64, true, 1536, 512, 128, 64, 128, 0, 0, 0, 0, 18432, 1, 384,
       8, 1, 2048, true, 262144, kBf16, kInt4G32, kBf16, kBf16},
      {"llama-3.1-70b", 80, 8192, 128256, 64, false, 0, 0, 0, 0, 0, 0, 0, 8, 128, 28672, 80, 0, 0,
       0, 0, false, 131072, kBf16, kBf16, kBf16, kBf16},
      {"llama-3.1-8b", 32, 4096, 128256, 32, false, 0, 0, 0, 0, 0, 0, 0, 8, 128, 14336, 32, 0, 0,
       0, 0, false, 131072, kBf16, kBf16, kBf16, kBf16},
      {"qwen3-235b-a22b", 94, 4096, 151936, 64, false, 0, 0, 0, 0, 0, 0, 0, 4, 128, 0, 0, 128, 8,
       0, 1536, false, 40960, kBf16, kBf16, kBf16, kBf16, true},
      // Cards for the H100 validation rows, dims from each model's HF
      // config.json (the URLs in the cards' sources).
      {"qwen3-8b", 36, 4096, 151936, 32, false, 0, 0, 0, 0, 0, 0, 0, 8, 128, 12288, 36, 0, 0, 0, 0,
       false, 40960, kBf16, kBf16, kBf16, kBf16, true},
      {"qwen3-30b-a3b", 48, 2048, 151936, 32, false, 0, 0, 0, 0, 0, 0, 0, 4, 128, 0, 0, 128, 8, 0,
       768, false, 40960, kBf16, kBf16, kBf16, kBf16, true},
      {"deepseek-v2-lite", 27, 2048, 102400, 16, true, 0, 512, 128, 64, 128, 0, 0, 0, 0, 10944, 1,
       64, 6, 2, 1408, false, 163840, kBf16, kBf16, kBf16, kBf16},
      {"llama-3.3-70b", 80, 8192, 128256, 64, false, 0, 0, 0, 0, 0, 0, 0, 8, 128, 28672, 80, 0, 0,
       0, 0, false, 131072, kBf16, kBf16, kBf16, kBf16},
  };
}

// Weights per GPU at TP `tp` (EP 1, no DP attention): replicated MLA down
// projections, head-sharded up/out projections, KV heads replicated when
// fewer than TP, FFN/experts sharded along the intermediate dim,
// vocab-parallel embedding and head, replicated BF16 norms and gates.
inline double WeightsPerGpu(const Dims& d, int64_t tp, const Fmt& attn, const Fmt& ex,
                            const Fmt& sh, const Fmt& dn) {
  double b = 0;
  const int64_t hl = d.heads / tp;
  int64_t norm_elems = (2 * d.L + 1) * d.h;
  if (d.mla) {
    // q through a low-rank latent (q_a, q_b) or, without q_lora, one q_proj.
    const double q = d.q_lora > 0 ? W(d.q_lora, d.h, attn) + W(hl * (d.nope + d.rope), d.q_lora, attn)
                                  : W(hl * (d.nope + d.rope), d.h, attn);
    b += d.L * (q + W(d.kv_lora + d.rope, d.h, attn) + W(hl * (d.nope + d.v), d.kv_lora, attn) +
                W(d.h, hl * d.v, attn));
    norm_elems += d.L * (d.q_lora + d.kv_lora);
    if (d.idx_dim > 0) {
      b += d.L * (W(d.idx_heads * d.idx_dim, d.q_lora, attn) + W(d.idx_dim, d.h, attn) +
                  W(d.idx_heads, d.h, attn));
      norm_elems += d.L * 2 * d.idx_dim;
    }
  } else {
    const int64_t kvl = std::max<int64_t>(1, d.kv_heads / tp);
    b += d.L * (W(hl * d.head_dim, d.h, attn) + 2 * W(kvl * d.head_dim, d.h, attn) +
                W(d.h, hl * d.head_dim, attn));
    if (d.qk_norm) norm_elems += d.L * 2 * d.head_dim;
  }
  b += norm_elems * 2.0;
  if (d.dense_layers > 0) {
    b += d.dense_layers * (2 * W(d.inter / tp, d.h, dn) + W(d.h, d.inter / tp, dn));
  }
  const int64_t moe_layers = d.L - d.dense_layers;
  if (d.experts > 0) {
    const int64_t f = d.moe_inter / tp;
    b += moe_layers * d.experts * (2 * W(f, d.h, ex) + W(d.h, f, ex));
    b += moe_layers * d.shared * (2 * W(f, d.h, sh) + W(d.h, f, sh));
    b += moe_layers * d.experts * d.h * 2.0;             // gate, bf16
    if (d.sigmoid) b += moe_layers * d.experts * 2.0;    // e_score_correction_bias
  }
  b += 2 * Cdiv(d.vocab, tp) * d.h * 2.0;  // embed + lm_head, bf16, untied
  return b;
}

inline double WeightsPerGpu(const Dims& d, int64_t tp) {
  return WeightsPerGpu(d, tp, d.attn, d.experts_fmt, d.shared_fmt, d.dense_fmt);
}

// KV bytes per token on one attention rank (SGLang profile_max_num_token cell sizes).
inline int64_t KvBytesPerToken(const Dims& d, int64_t attn_tp, bool fp8) {
  if (d.mla) {
    int64_t main = d.idx_dim > 0 && fp8 ? d.L * (d.kv_lora + d.kv_lora / 128 * 4 + d.rope * 2)
                                        : d.L * (d.kv_lora + d.rope) * (fp8 ? 1 : 2);
    int64_t idx = d.idx_dim > 0 ? d.L * (d.idx_dim + d.idx_dim / 128 * 4) : 0;
    return main + idx;
  }
  return std::max<int64_t>(1, d.kv_heads / attn_tp) * 2 * d.head_dim * d.L * (fp8 ? 1 : 2);
}

// H200: nvidia-smi's 143,771 MiB (calibrate/profiles/h200-sxm.json).
inline constexpr int64_t kH200Bytes = 143771LL * 1024 * 1024;

// Engine memory terms of the latest shipped engine versions, as written in
// the public logs and code the engine profiles cite.
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// SGLang: 1.20 GiB gone before start-up and 1.96 GiB of NCCL/custom
// all-reduce buffers at TP >= 2 (0.4.5.post3 DeepSeek-R1 8xH200 log).
inline constexpr double kSglangStartup = 1.20 * kGiB;
inline constexpr double kSglangDistInit = 1.96 * kGiB;

// What SGLang keeps beside the checkpoint: an fp32 rotary cache and, for
// MLA, BF16 w_kc/w_vc copies of the local kv_b_proj heads.
inline double SglangResidentExtras(const Dims& d, int64_t tp) {
  double b = d.max_pos * (d.mla ? d.rope : d.head_dim) * 4.0;
  if (d.mla) b += d.L * (d.heads / tp) * (d.nope + d.v) * d.kv_lora * 2.0;
  return b;
}

// vLLM keeps the rotary cache in BF16.
inline double VllmResidentExtras(const Dims& d) {
  return d.max_pos * (d.mla ? d.rope : d.head_dim) * 2.0;
}

// vLLM 0.19 profile_run peak: 0.115 GiB + max(sampler over 1024 sequences x
// vocab x 14 B + 8192 hidden states, a dense FFN's activations) + the fused
// MoE caches for 8192 x top_k pairs.
inline double VllmActivation(const Dims& d, int64_t tp) {
  const double tokens = 8192;
  const double sampler = 1024.0 * d.vocab * 14 + tokens * d.h * 2;
  const double dense = d.dense_layers > 0 ? tokens * (2 * d.h + 3 * (d.inter / tp)) * 2 : 0;
  const double moe = d.experts > 0 ? tokens * d.topk * (3 * (d.moe_inter / tp) + d.h) * 2 : 0;
  return 123480310.0 + std::max(sampler, dense) + moe;
}

// vLLM 0.19 non-torch memory on H100: 0.25 GiB at TP1, 2.13 GiB at TP >= 2.
inline double VllmNonTorch(int64_t tp) { return tp > 1 ? 2287070085.0 : 268435456.0; }

}  // namespace capplan::models::hand

#endif  // CAPPLAN_TESTS_MODELS_HAND_MODEL_H_
