// Architectures whose layers are not all alike: Qwen3-Next (Gated DeltaNet
// linear attention with a full-attention layer every few, MoE with a gated
// shared expert) and Llama 4 (chunked local attention with a global layer
// every few, interleaved MoE). Key names and defaults follow transformers'
// configuration_qwen3_next.py and configuration_llama4.py.
#include <string>
#include <vector>

#include "models/hf_import_internal.h"

namespace capplan::models::hf {

namespace {

constexpr const char* kTransformers = "huggingface/transformers src/transformers/models/";

// Layer kinds listed by a config key, counted; `known` are the accepted
// entries, each an int (no_rope_layers) or a string (layer_types).
Result<std::vector<std::string>> ReadLayerList(ArchContext& c, const std::string& key,
                                               int64_t layers) {
  std::vector<std::string> out;
  const nlohmann::json* raw = c.cfg().Raw(key);
  if (raw == nullptr || raw->is_null()) return out;
  if (!raw->is_array() || static_cast<int64_t>(raw->size()) != layers) {
    return c.cfg().Error(key, "must list one entry per layer (" + std::to_string(layers) + ")");
  }
  for (const auto& v : *raw) out.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

Status CopyEqualInt(ArchContext& c, const std::string& key, int64_t want, const std::string& why) {
  CAPPLAN_ASSIGN_OR_RETURN(int64_t v, c.ReadInt(key, want));
  if (v != want) return c.cfg().Error(key, why);
  return Status::Ok();
}

// Gated DeltaNet layers from layer_types (or full_attention_interval alone).
Status MapLinearAttention(ArchContext& c) {
  CAPPLAN_ASSIGN_OR_RETURN(int64_t layers, c.ReadInt("num_hidden_layers", std::nullopt));
  CAPPLAN_ASSIGN_OR_RETURN(int64_t interval, c.ReadInt("full_attention_interval", 4));
  if (interval < 2 || interval > layers) {
    return c.cfg().Error("full_attention_interval", "must be in [2, num_hidden_layers]");
  }
  CAPPLAN_ASSIGN_OR_RETURN(std::vector<std::string> types, ReadLayerList(c, "layer_types", layers));
  for (size_t i = 0; i < types.size(); ++i) {
    const bool full = (i + 1) % interval == 0;
    if (types[i] != (full ? "full_attention" : "linear_attention")) {
      return c.cfg().Error("layer_types", "entry " + std::to_string(i) + " is '" + types[i] +
                                              "'; only one full_attention layer every "
                                              "full_attention_interval is modelled");
    }
  }
  nlohmann::ordered_json la = {{"kind", "gated_deltanet"},
                               {"layers", layers - layers / interval},
                               {"full_attention_interval", interval}};
  const std::pair<const char*, const char*> keys[] = {
      {"num_key_heads", "linear_num_key_heads"},   {"num_value_heads", "linear_num_value_heads"},
      {"key_head_dim", "linear_key_head_dim"},     {"value_head_dim", "linear_value_head_dim"},
      {"conv_kernel", "linear_conv_kernel_dim"},
  };
  for (const auto& [card_key, hf_key] : keys) {
    CAPPLAN_ASSIGN_OR_RETURN(int64_t v, c.ReadInt(hf_key, std::nullopt));
    if (v < 1) return c.cfg().Error(hf_key, "must be >= 1");
    la[card_key] = v;
  }
  c.Put("linear_attention", la,
        c.From("layer_types") + ", " + c.From("full_attention_interval") +
            ", linear_num_key_heads/linear_num_value_heads/linear_key_head_dim/"
            "linear_value_head_dim/linear_conv_kernel_dim (Gated DeltaNet, " + kTransformers +
            "qwen3_next/modeling_qwen3_next.py)");
  return Status::Ok();
}

}  // namespace

Status MapQwen3Next(ArchContext& c) {
  const std::string modeling = std::string(kTransformers) + "qwen3_next/modeling_qwen3_next.py";
  CAPPLAN_RETURN_IF_ERROR(MapCommonDecoder(c));
  CAPPLAN_RETURN_IF_ERROR(MapGqaAttention(c));
  c.Fixed("qk_norm", true, modeling + " (Qwen3NextAttention q_norm, k_norm)");
  c.Fixed("attention_output_gate", true,
          modeling + " (q_proj emits query and gate: num_heads x head_dim x 2)");
  CAPPLAN_ASSIGN_OR_RETURN(bool bias, c.ReadBool("attention_bias", false));
  if (bias) return c.cfg().Error("attention_bias", "attention biases on Qwen3-Next are not modelled");
  CAPPLAN_RETURN_IF_ERROR(MapLinearAttention(c));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("n_routed_experts", "num_experts"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("experts_per_token", "num_experts_per_tok"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("moe_intermediate_size", "moe_intermediate_size"));
  CAPPLAN_ASSIGN_OR_RETURN(int64_t moe, c.ReadInt("moe_intermediate_size", std::nullopt));
  CAPPLAN_RETURN_IF_ERROR(CopyEqualInt(c, "shared_expert_intermediate_size", moe,
                                       "a shared expert wider than the routed ones is not "
                                       "modelled (must equal moe_intermediate_size)"));
  c.Put("n_shared_experts", 1, c.From("shared_expert_intermediate_size") + " (one shared expert)");
  c.Fixed("shared_expert_gate", true, modeling + " (shared_expert_gate: hidden -> 1)");
  CAPPLAN_RETURN_IF_ERROR(CopyEqualInt(c, "decoder_sparse_step", 1, "only 1 (every layer MoE) is modelled"));
  const nlohmann::json* dense = c.cfg().Raw("mlp_only_layers");
  if (dense != nullptr && dense->is_array() && !dense->empty()) {
    return c.cfg().Error("mlp_only_layers", "dense layers in Qwen3-Next are not modelled");
  }
  c.cfg().Touch("mlp_only_layers");
  c.cfg().Touch("intermediate_size");
  c.Fixed("intermediate_size", 0, "every Qwen3-Next layer is MoE: intermediate_size unused");
  c.Fixed("first_k_dense", 0, "every Qwen3-Next layer is MoE");
  c.Fixed("scoring_func", "softmax", modeling + " (softmax router)");
  c.Fixed("routed_scaling_factor", 1.0, "Qwen3-Next scales routed outputs by 1");
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("mtp_layers", "num_nextn_predict_layers", 0, 0));
  c.naming().shared_expert = "mlp.shared_expert";
  c.naming().shared_expert_gate = "mlp.shared_expert_gate";
  return Status::Ok();
}

namespace {

// Llama 4: every no_rope_layer_interval-th layer is a global NoPE layer;
// the others attend within attention_chunk_size-token chunks
// (no_rope_layers[i] == 1: a RoPE, chunked layer).
Status MapChunkedAttention(ArchContext& c, int64_t layers) {
  CAPPLAN_ASSIGN_OR_RETURN(int64_t interval, c.ReadInt("no_rope_layer_interval", 4));
  CAPPLAN_ASSIGN_OR_RETURN(std::vector<std::string> list, ReadLayerList(c, "no_rope_layers", layers));
  int64_t chunked = 0;
  for (int64_t i = 0; i < layers; ++i) {
    const bool rope = list.empty() ? (i + 1) % interval != 0 : list[i] == "1";
    if (!list.empty() && list[i] != "0" && list[i] != "1") {
      return c.cfg().Error("no_rope_layers", "entries must be 0 or 1");
    }
    chunked += rope ? 1 : 0;
  }
  if (chunked == 0) return Status::Ok();
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("sliding_window", "attention_chunk_size"));
  c.Put("sliding_window_layers", chunked,
        c.From("no_rope_layers") + " (RoPE layers attend within their chunk)");
  c.Fixed("local_attention", "chunked",
          std::string(kTransformers) + "llama4/modeling_llama4.py (chunked attention mask on "
                                       "RoPE layers)");
  return Status::Ok();
}

}  // namespace

Status MapLlama4(ArchContext& c) {
  const std::string modeling = std::string(kTransformers) + "llama4/modeling_llama4.py";
  CAPPLAN_RETURN_IF_ERROR(MapCommonDecoder(c));
  CAPPLAN_RETURN_IF_ERROR(MapGqaAttention(c));
  CAPPLAN_ASSIGN_OR_RETURN(bool bias, c.ReadBool("attention_bias", false));
  if (bias) return c.cfg().Error("attention_bias", "attention biases on Llama 4 are not modelled");
  c.cfg().Touch("use_qk_norm");  // an L2 norm without weights (Llama4TextL2Norm)
  CAPPLAN_ASSIGN_OR_RETURN(int64_t layers, c.ReadInt("num_hidden_layers", std::nullopt));
  CAPPLAN_RETURN_IF_ERROR(MapChunkedAttention(c, layers));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("n_routed_experts", "num_local_experts"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("experts_per_token", "num_experts_per_tok"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("moe_intermediate_size", "intermediate_size"));
  c.Fixed("n_shared_experts", 1, modeling + " (Llama4TextMoe.shared_expert, intermediate_size)");
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("moe_layer_step", "interleave_moe_layer_step", 1));
  CAPPLAN_ASSIGN_OR_RETURN(int64_t step, c.ReadInt("interleave_moe_layer_step", 1));
  if (const nlohmann::json* moe = c.cfg().Raw("moe_layers"); moe != nullptr && !moe->is_null()) {
    nlohmann::json want = nlohmann::json::array();
    for (int64_t i = step - 1; i < layers; i += step) want.push_back(i);
    if (*moe != want) {
      return c.cfg().Error("moe_layers", "only every interleave_moe_layer_step-th layer "
                                         "(step - 1, 2 step - 1, ...) is modelled as MoE");
    }
  }
  if (layers / step < layers) {
    CAPPLAN_RETURN_IF_ERROR(c.CopyInt("intermediate_size", "intermediate_size_mlp"));
  } else {
    c.cfg().Touch("intermediate_size_mlp");
    c.Fixed("intermediate_size", 0, "every layer is MoE (interleave_moe_layer_step 1)");
  }
  c.Fixed("first_k_dense", 0, "Llama 4 interleaves its dense layers (moe_layer_step)");
  c.Fixed("scoring_func", "sigmoid", modeling + " (sigmoid of the top-k router logits)");
  c.Fixed("score_correction_bias", false, modeling + " (the router has no bias)");
  c.Fixed("routed_scaling_factor", 1.0, modeling);
  c.Fixed("mtp_layers", 0, "Llama 4 ships no MTP layers");
  for (const char* k : {"attn_temperature_tuning", "floor_scale", "attn_scale",
                        "cache_implementation", "router_jitter_noise", "for_llm_compressor",
                        "no_rope_layer_interval", "attention_chunk_size", "no_rope_layers"}) {
    c.cfg().Touch(k);
  }
  ModuleNaming& n = c.naming();
  n.ffn = "feed_forward";
  n.router = "feed_forward.router";
  n.shared_expert = "feed_forward.shared_expert";
  n.fused_experts = true;
  if (c.label().find("text_config") != std::string::npos) {
    // Llama4ForConditionalGeneration checkpoints nest the text model.
    n.layer_prefix = "language_model.model.layers.";
    n.embed_tokens = "language_model.model.embed_tokens";
    n.lm_head = "language_model.lm_head";
  }
  return Status::Ok();
}


}  // namespace capplan::models::hf
