// A model card: architecture dimensions and checkpoint precision, loaded from
// models/cards/<name>.json. Every card names its sources inside it.
#ifndef CAPPLAN_MODELS_CARD_H_
#define CAPPLAN_MODELS_CARD_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/types.h"

namespace capplan::models {

enum class AttentionKind { kGqa, kMla };  // MHA is GQA with kv_heads == heads

// What a window-limited attention layer sees: the last `window` tokens
// (sliding), or the tokens of its own `window`-sized chunk (chunked local
// attention, Llama 4).
enum class LocalAttention { kSliding, kChunked };

// The Gated DeltaNet layers of a hybrid linear-attention model (Qwen3-Next,
// transformers Qwen3NextGatedDeltaNet). Each keeps per sequence a causal-conv
// state of conv_kernel - 1 steps over q, k and v, and a recurrent state of
// num_value_heads x key_head_dim x value_head_dim, instead of KV per token.
struct LinearAttention {
  int layers = 0;                   // linear layers; the rest are full attention
  int full_attention_interval = 0;  // every k-th layer is full attention
  int num_key_heads = 0, num_value_heads = 0;
  int key_head_dim = 0, value_head_dim = 0;
  int conv_kernel = 0;
  int64_t KeyDim() const { return int64_t{num_key_heads} * key_head_dim; }
  int64_t ValueDim() const { return int64_t{num_value_heads} * value_head_dim; }
  // Channels the causal conv runs over: q and k (key width each) and v.
  int64_t ConvDim() const { return 2 * KeyDim() + ValueDim(); }
};

// The token mixer a layer runs: softmax attention over the whole context,
// window-limited softmax attention (sliding or chunked local), or linear
// attention (Gated DeltaNet).
enum class LayerMixer { kFull, kWindow, kLinear };

struct ModelCard {
  std::string name;          // "kimi-k2.6"
  std::string display_name;  // "Kimi K2.6"
  std::vector<std::string> sources;

  int num_layers = 0;
  int hidden_size = 0;
  int vocab_size = 0;
  bool tie_word_embeddings = false;
  int64_t max_position_embeddings = 0;
  int mtp_layers = 0;  // MTP / nextn layers (not served unless speculative)

  AttentionKind attention = AttentionKind::kGqa;
  int num_heads = 0;
  // GQA
  int num_kv_heads = 0;
  int head_dim = 0;  // may differ from hidden_size / num_heads (Qwen3-30B-A3B)
  // Per-head RMSNorm on q and k before RoPE (Qwen3): two head_dim-long
  // weight vectors per layer.
  bool qk_norm = false;
  // Linear-layer biases of attention: q/k/v (GLM-4.5 lineage) or q/k/v/o
  // (gpt-oss, Llama with attention_bias).
  bool qkv_bias = false;
  bool o_bias = false;
  // A learned per-head sink logit per layer (gpt-oss).
  bool attention_sinks = false;
  // Layers whose attention sees only the last `sliding_window` tokens
  // (gpt-oss alternates them with full layers), or, with local_attention
  // kChunked, only the tokens of their own `sliding_window`-token chunk
  // (Llama 4). How much of their KV an engine holds is the engine's rule
  // (models/engines/*.json memory.local_attention_pool).
  int sliding_window = 0;
  int sliding_window_layers = 0;
  LocalAttention local_attention = LocalAttention::kSliding;
  // q_proj also emits a per-head sigmoid gate on the attention output
  // (Qwen3-Next): its output width is twice num_heads x head_dim.
  bool attention_output_gate = false;
  // Linear-attention layers of a hybrid model; layers == 0: none.
  LinearAttention linear_attention;
  // MLA
  int q_lora_rank = 0;  // 0: no q low-rank
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  // DSA indexer (GLM-5.x, DeepSeek-V3.2); index_topk == 0 means none.
  int index_n_heads = 0;
  int index_head_dim = 0;
  int index_topk = 0;
  // Layers that compute a fresh indexer top-k ("IndexShare": 1 in 4 for
  // GLM-5.2); 0 means every layer.
  int index_share_every = 0;

  // FFN
  int intermediate_size = 0;  // dense FFN
  int first_k_dense = 0;      // leading dense layers of an MoE model
  int n_routed_experts = 0;   // 0: dense model
  int experts_per_token = 0;
  int n_shared_experts = 0;
  int moe_intermediate_size = 0;
  double routed_scaling_factor = 1.0;
  std::string scoring_func = "softmax";  // "sigmoid" for DeepSeek-V3 lineage
  // Biases on the router and on every routed expert's projections (gpt-oss).
  bool moe_bias = false;
  // Every moe_layer_step-th layer after the leading dense ones is MoE, the
  // others dense (Llama 4 Maverick: 2, Llama 4's interleave_moe_layer_step).
  int moe_layer_step = 1;
  // A per-expert bias added to the router scores for top-k selection
  // (e_score_correction_bias); the card's default: sigmoid scoring has one
  // (DeepSeek-V3 lineage), softmax none. Llama 4 scores by sigmoid without.
  bool score_correction_bias = false;
  // A sigmoid gate (hidden -> 1) scales the shared expert's output (Qwen3-Next).
  bool shared_expert_gate = false;

  // Checkpoint precision per component as shipped.
  std::map<Component, WeightFormat> checkpoint;
  // Components a `weights: bf16|fp8|int4` choice re-quantizes, unless
  // `quantize_by_format` names the set for that format (as the family's
  // public checkpoints of that format are made; `quantize_source` says which).
  std::vector<Component> quantizable;
  std::map<std::string, std::vector<Component>> quantize_by_format;
  std::map<std::string, std::string> quantize_source;
  // The components `weights: <format>` re-quantizes.
  const std::vector<Component>& QuantizedBy(const std::string& format) const {
    auto it = quantize_by_format.find(format);
    return it == quantize_by_format.end() ? quantizable : it->second;
  }

  bool IsMoe() const { return n_routed_experts > 0; }
  int NumMoeLayers() const {
    return IsMoe() ? (num_layers - first_k_dense) / std::max(1, moe_layer_step) : 0;
  }
  int NumDenseLayers() const { return num_layers - NumMoeLayers(); }
  // Layers with softmax attention over a per-token KV cache (all of them
  // unless the model is a linear-attention hybrid).
  int FullAttentionLayers() const { return num_layers - linear_attention.layers; }
  bool IsHybridLinear() const { return linear_attention.layers > 0; }
  // Whether some layers are not full attention (linear or window-limited).
  bool HasMixedLayers() const { return IsHybridLinear() || sliding_window_layers > 0; }
  // The mixer of layer `l` (card_layers.cc): the card keeps counts, and the
  // configs these come from close each period with the full layer.
  LayerMixer MixerOf(int l) const;
};

// Loads `name_or_path`: a path to a card .json file, a Hugging Face model
// folder or its config.json (imported, models/hf_import.h), or a card name looked up in
// DataPath("models/cards"). Unknown names get "did you mean".
Result<ModelCard> LoadModelCard(const std::string& name_or_path);

// The draft model of speculative decoding, shaped from its target's card.
//  kMtp: the card's own MTP (nextn) layers, `layers` of them (0: all the
//    card has); each is a full decoder layer like the target's last ones
//    (MoE in an MoE model), as DeepSeek-V3 and GLM ship them.
//  kEagle: an EAGLE head of `layers` (0: one) dense decoder layers of the
//    target's width, attention and dense FFN size.
// Engines share the target's embedding and LM head with the draft, so they
// stay in the draft card (its ops compute logits) but DraftWeightBytes does
// not count them again.
enum class DraftKind { kNone, kMtp, kEagle };
Result<ModelCard> DraftCard(const ModelCard& card, DraftKind kind, int layers);
Result<ModelCard> ParseModelCard(const std::string& json_text, const std::string& origin);
std::vector<std::string> ShippedModelNames();

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_CARD_H_
