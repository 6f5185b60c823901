#include "models/card_layers.h"

#include <algorithm>
#include <string>

namespace capplan::models {

namespace {

constexpr double kMaxHeads = 4096, kMaxHeadDim = 65536, kMaxKernel = 64, kMaxLayers = 1000;

Status ParseLinearAttention(JsonObject& o, ModelCard* c) {
  if (!o.Has("linear_attention")) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject la, o.Child("linear_attention", true));
  CAPPLAN_RETURN_IF_ERROR(la.CheckObject());
  std::string kind;
  CAPPLAN_RETURN_IF_ERROR(la.Get("kind", &kind, true));
  CAPPLAN_RETURN_IF_ERROR(la.CheckOneOf("kind", kind, {"gated_deltanet"}));
  LinearAttention& l = c->linear_attention;
  struct Field {
    const char* key;
    int* out;
    double hi;
  };
  const Field fields[] = {
      {"layers", &l.layers, kMaxLayers},
      {"full_attention_interval", &l.full_attention_interval, kMaxLayers},
      {"num_key_heads", &l.num_key_heads, kMaxHeads},
      {"num_value_heads", &l.num_value_heads, kMaxHeads},
      {"key_head_dim", &l.key_head_dim, kMaxHeadDim},
      {"value_head_dim", &l.value_head_dim, kMaxHeadDim},
      {"conv_kernel", &l.conv_kernel, kMaxKernel},
  };
  for (const Field& f : fields) {
    CAPPLAN_RETURN_IF_ERROR(la.Get(f.key, f.out, true));
    CAPPLAN_RETURN_IF_ERROR(la.CheckRange(f.key, *f.out, 1, f.hi));
  }
  if (l.num_value_heads % l.num_key_heads != 0) {
    return la.Error("num_value_heads", "must be a multiple of num_key_heads (" +
                                           std::to_string(l.num_key_heads) + ")");
  }
  return la.Finish();
}

}  // namespace

Status ParseLayerStructure(JsonObject& o, ModelCard* c) {
  CAPPLAN_RETURN_IF_ERROR(ParseLinearAttention(o, c));
  CAPPLAN_RETURN_IF_ERROR(o.Get("attention_output_gate", &c->attention_output_gate));
  CAPPLAN_RETURN_IF_ERROR(o.Get("shared_expert_gate", &c->shared_expert_gate));
  c->score_correction_bias = c->scoring_func == "sigmoid";
  CAPPLAN_RETURN_IF_ERROR(o.Get("score_correction_bias", &c->score_correction_bias));
  CAPPLAN_RETURN_IF_ERROR(o.Get("moe_layer_step", &c->moe_layer_step));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("moe_layer_step", c->moe_layer_step, 1, kMaxLayers));
  std::string local = "sliding";
  CAPPLAN_RETURN_IF_ERROR(o.Get("local_attention", &local));
  CAPPLAN_RETURN_IF_ERROR(o.CheckOneOf("local_attention", local, {"sliding", "chunked"}));
  c->local_attention = local == "chunked" ? LocalAttention::kChunked : LocalAttention::kSliding;
  return Status::Ok();
}

// The full-attention layers spread evenly, each closing its period: layer
// l is full when floor((l + 1) F / N) steps past floor(l F / N). That is
// Qwen3-Next's layer_types (every full_attention_interval-th layer full,
// transformers configuration_qwen3_next.py), gpt-oss's (odd layers full,
// configuration_gpt_oss.py layer_types) and Llama 4's (every
// no_rope_layer_interval-th layer a global NoPE layer,
// configuration_llama4.py no_rope_layers).
LayerMixer ModelCard::MixerOf(int l) const {
  if (!HasMixedLayers()) return LayerMixer::kFull;
  const int64_t n = std::max(1, num_layers);
  const int64_t full = IsHybridLinear() ? FullAttentionLayers() : n - sliding_window_layers;
  const bool closes = (l + 1) * full / n > l * full / n;
  if (closes) return LayerMixer::kFull;
  return IsHybridLinear() ? LayerMixer::kLinear : LayerMixer::kWindow;
}

Status CheckLayerStructure(const JsonObject& o, const ModelCard& c) {
  const LinearAttention& l = c.linear_attention;
  if (l.layers > 0) {
    if (c.attention != AttentionKind::kGqa) {
      return o.Error("linear_attention", "a hybrid model's full-attention layers must be gqa");
    }
    if (l.layers >= c.num_layers) {
      return o.Error("linear_attention", "layers must leave at least one full-attention layer");
    }
    if (c.num_layers - c.num_layers / l.full_attention_interval != l.layers) {
      return o.Error("linear_attention",
                     "layers " + std::to_string(l.layers) + " disagrees with one full-attention "
                     "layer every " + std::to_string(l.full_attention_interval) + " of " +
                     std::to_string(c.num_layers));
    }
    if (c.sliding_window_layers > 0) {
      return o.Error("linear_attention", "linear and sliding-window layers together are not "
                                         "modelled");
    }
  }
  if (c.attention_output_gate && c.attention != AttentionKind::kGqa) {
    return o.Error("attention_output_gate", "only meaningful for gqa attention");
  }
  if (c.shared_expert_gate && c.n_shared_experts == 0) {
    return o.Error("shared_expert_gate", "needs a shared expert (n_shared_experts > 0)");
  }
  if (c.moe_layer_step > 1 && !c.IsMoe()) {
    return o.Error("moe_layer_step", "only meaningful for MoE models");
  }
  if (c.local_attention == LocalAttention::kChunked && c.sliding_window_layers == 0) {
    return o.Error("local_attention", "chunked needs sliding_window and sliding_window_layers");
  }
  return Status::Ok();
}

}  // namespace capplan::models
