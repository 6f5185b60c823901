// The model slice the engine runs: N layers of one TP rank's shard of a
// shipped model card, with deterministic synthetic weights.
//
// "full" dims are the real per-GPU shapes (heads / tp, expert intermediate /
// tp), what the CUDA backend runs. "small" dims shard a shrunk card: the
// card's architecture (GQA or MLA, DSA indexer, dense and MoE layers, sigmoid
// or softmax routing, the weight formats) at small widths, so the CPU
// backend runs a whole continuous-batching workload in a test. Either way
// the slice is a ShardedModel whose layer program both backends walk. Small-dim numbers are never GPU or
// full-shape numbers and every output says which dims were used.
#ifndef CAPPLAN_ENGINE_SLICE_CONFIG_H_
#define CAPPLAN_ENGINE_SLICE_CONFIG_H_

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "kernels/gemm/gemm_cost.h"
#include "models/card.h"
#include "models/ops.h"
#include "models/types.h"

namespace capplan::engine {

struct SliceConfig {
  std::string model;  // card name
  std::string dims;   // "small" | "full"
  int tp = 1;
  int layers = 1;
  int hidden = 0;
  int vocab = 0;
  models::AttentionKind attention = models::AttentionKind::kGqa;
  int q_heads = 0;  // per rank
  // GQA
  int kv_heads = 0;  // per rank
  int head_dim = 0;
  // q_proj also emits a per-head sigmoid gate on the attention output
  // (Qwen3-Next's full layers): wq is twice as wide.
  bool attention_output_gate = false;
  // MLA (absorbed decode form: the cache holds latent + rope per token)
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_nope = 0;
  int qk_rope = 0;
  int v_head_dim = 0;
  // DSA indexer; index_topk == 0: none
  int index_heads = 0;
  int index_head_dim = 0;
  int index_topk = 0;
  // IndexShare (GLM-5.2, https://lambda.ai/inference-models/zai-org/glm-5.2):
  // a fresh indexer top-k only every this many layers; the layers between
  // reuse it. 1: every layer.
  int index_share_every = 1;
  // Gated DeltaNet layers of a hybrid (per rank; linear_value_heads == 0:
  // none). Which layers are linear is the slice card's (MixerOf).
  int linear_key_heads = 0, linear_value_heads = 0;
  int linear_key_dim = 0, linear_value_dim = 0, linear_conv_kernel = 0;
  // FFN
  int dense_intermediate = 0;  // per rank
  int first_k_dense = 0;       // dense layers leading the slice (at most 1 for MoE)
  int n_experts = 0;           // 0: dense model
  int top_k = 0;
  int n_shared = 0;
  int moe_intermediate = 0;  // per rank
  std::string scoring = "softmax";
  double routed_scaling = 1.0;
  // Formats (models/memory.h ResolveWeightFormats, mapped to the GEMM kinds).
  kernels::GemmWeightFormat attention_format = kernels::GemmWeightFormat::kBf16;
  kernels::GemmWeightFormat experts_format = kernels::GemmWeightFormat::kBf16;
  kernels::GemmWeightFormat shared_format = kernels::GemmWeightFormat::kBf16;
  kernels::GemmWeightFormat dense_ffn_format = kernels::GemmWeightFormat::kBf16;
  int int4_group = 128;
  models::Dtype kv_dtype = models::Dtype::kBf16;
  uint64_t seed = 1;
  // One TP rank of the slice's card (shrunk at small dims), whose layer
  // program (program->program) is what the backends execute and the
  // pricer prices for the same batch; the widths above are read from it
  // (the run file records them). Which layers are MoE, linear or hold a DSA
  // indexer is the program's layer groups' (LayerGroup), and the weights
  // are allocated from its ops (slice_weights.h).
  std::shared_ptr<const models::ShardedModel> program;

  // Floats per token per layer in the KV cache (values as stored, after
  // rounding to the KV dtype): GQA K and V; MLA latent + rope + index key.
  int KvEntryWidth() const;
  // "kimi-k2.6 tp8 2 layers small dims, weights int4/bf16, kv fp8"
  std::string Describe() const;
};

// Builds the slice. Invalid when tp does not divide the heads, layers is out
// of [1, card layers], or dims is neither "small" nor "full".
Result<SliceConfig> MakeSliceConfig(const models::ModelCard& card, int tp, int layers,
                                    const std::string& dims, const models::PrecisionChoice& choice,
                                    uint64_t seed);

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_SLICE_CONFIG_H_
