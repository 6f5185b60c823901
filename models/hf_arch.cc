// Per-architecture mappings from a Hugging Face config.json onto card fields.
// Key names and defaults follow each family's transformers configuration
// class (huggingface/transformers src/transformers/models/<type>/
// configuration_<type>.py); facts the config does not carry (a family's
// router scoring, qk_norm) cite the modeling code that fixes them.
#include <string>

#include "models/hf_import_internal.h"

namespace capplan::models::hf {

void ArchContext::Put(const std::string& card_key, const nlohmann::ordered_json& value,
                      const std::string& source) {
  card_[card_key] = value;
  sources_[card_key] = source;
}

Result<int64_t> ArchContext::ReadInt(const std::string& hf_key, std::optional<int64_t> fallback) {
  const nlohmann::json* raw = cfg_->Raw(hf_key);
  if (raw == nullptr || raw->is_null()) {
    if (!fallback) return cfg_->Error(hf_key, "required key is missing");
    return *fallback;
  }
  if (!raw->is_number_integer()) return cfg_->Error(hf_key, "must be an integer");
  return raw->get<int64_t>();
}

Result<bool> ArchContext::ReadBool(const std::string& hf_key, bool fallback) {
  const nlohmann::json* raw = cfg_->Raw(hf_key);
  if (raw == nullptr || raw->is_null()) return fallback;
  if (!raw->is_boolean()) return cfg_->Error(hf_key, "must be true or false");
  return raw->get<bool>();
}

Status ArchContext::CopyInt(const std::string& card_key, const std::string& hf_key,
                            std::optional<int64_t> fallback, int64_t lo) {
  const bool present = cfg_->Has(hf_key) && !cfg_->json()[hf_key].is_null();
  CAPPLAN_ASSIGN_OR_RETURN(int64_t v, ReadInt(hf_key, fallback));
  if (v < lo) return cfg_->Error(hf_key, "must be >= " + std::to_string(lo));
  Put(card_key, v, present ? From(hf_key) : From(hf_key) + " absent: the family's default");
  return Status::Ok();
}

Status ArchContext::CopyBool(const std::string& card_key, const std::string& hf_key,
                             bool fallback) {
  const bool present = cfg_->Has(hf_key);
  CAPPLAN_ASSIGN_OR_RETURN(bool v, ReadBool(hf_key, fallback));
  Put(card_key, v, present ? From(hf_key) : From(hf_key) + " absent: the family's default");
  return Status::Ok();
}

Status ArchContext::CopyDouble(const std::string& card_key, const std::string& hf_key,
                               double fallback) {
  std::optional<double> v;
  CAPPLAN_RETURN_IF_ERROR(cfg_->Get(hf_key, &v));
  Put(card_key, v.value_or(fallback),
      v ? From(hf_key) : From(hf_key) + " absent: the family's default");
  return Status::Ok();
}

namespace {
constexpr const char* kTransformers = "huggingface/transformers src/transformers/models/";
}  // namespace

Status MapCommonDecoder(ArchContext& c) {
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("num_layers", "num_hidden_layers"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("hidden_size", "hidden_size"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("vocab_size", "vocab_size"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyBool("tie_word_embeddings", "tie_word_embeddings", false));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("max_position_embeddings", "max_position_embeddings"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("num_heads", "num_attention_heads"));
  return Status::Ok();
}

Status MapGqaAttention(ArchContext& c) {
  c.Fixed("attention", "gqa", "grouped-query attention (the family's modeling code)");
  CAPPLAN_ASSIGN_OR_RETURN(int64_t heads, c.ReadInt("num_attention_heads", std::nullopt));
  CAPPLAN_ASSIGN_OR_RETURN(int64_t hidden, c.ReadInt("hidden_size", std::nullopt));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("num_kv_heads", "num_key_value_heads", heads));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("head_dim", "head_dim", hidden / heads));
  return Status::Ok();
}

namespace {

Status MapCommon(ArchContext& c) { return MapCommonDecoder(c); }
Status MapGqa(ArchContext& c) { return MapGqaAttention(c); }

// Refuses a key the card cannot represent when it is set.
Status RefuseTrue(ArchContext& c, const std::string& key, const std::string& why) {
  CAPPLAN_ASSIGN_OR_RETURN(bool v, c.ReadBool(key, false));
  if (v) return c.cfg().Error(key, why);
  return Status::Ok();
}

Status MapLlama(ArchContext& c) {
  CAPPLAN_RETURN_IF_ERROR(MapCommon(c));
  CAPPLAN_RETURN_IF_ERROR(MapGqa(c));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("intermediate_size", "intermediate_size"));
  CAPPLAN_ASSIGN_OR_RETURN(bool bias, c.ReadBool("attention_bias", false));
  c.Put("attention_bias", bias ? "qkvo" : "none",
        c.From("attention_bias") + " (LlamaAttention puts it on q, k, v and o)");
  CAPPLAN_RETURN_IF_ERROR(RefuseTrue(c, "mlp_bias", "MLP biases are not modelled"));
  CAPPLAN_ASSIGN_OR_RETURN(int64_t tp, c.ReadInt("pretraining_tp", 1));
  (void)tp;  // a training-time split; the weights are the same
  c.Fixed("mtp_layers", 0, "Llama ships no MTP layers");
  return Status::Ok();
}

Status MapQwen3(ArchContext& c) {
  CAPPLAN_RETURN_IF_ERROR(MapCommon(c));
  CAPPLAN_RETURN_IF_ERROR(MapGqa(c));
  c.Fixed("qk_norm", true,
          std::string(kTransformers) + "qwen3/modeling_qwen3.py (q_norm, k_norm: RMSNorm(head_dim))");
  CAPPLAN_RETURN_IF_ERROR(RefuseTrue(c, "attention_bias", "attention biases on Qwen3 are not modelled"));
  CAPPLAN_RETURN_IF_ERROR(RefuseTrue(c, "use_sliding_window",
                                     "Qwen3 sliding-window layers (max_window_layers) are not "
                                     "modelled; set it false"));
  c.cfg().Touch("sliding_window");  // inert unless use_sliding_window
  c.Fixed("mtp_layers", 0, "Qwen3 ships no MTP layers");
  return Status::Ok();
}

Status MapQwen3Dense(ArchContext& c) {
  CAPPLAN_RETURN_IF_ERROR(MapQwen3(c));
  return c.CopyInt("intermediate_size", "intermediate_size");
}

// Leading dense layers from a list of dense layer indices, which must be
// 0..k-1 (the card has no other placement).
Result<int64_t> LeadingDense(ArchContext& c, const std::string& key) {
  const nlohmann::json* raw = c.cfg().Raw(key);
  if (raw == nullptr || raw->is_null()) return int64_t{0};
  if (!raw->is_array()) return c.cfg().Error(key, "must be a list of layer indices");
  for (size_t i = 0; i < raw->size(); ++i) {
    if (!(*raw)[i].is_number_integer() || (*raw)[i].get<int64_t>() != static_cast<int64_t>(i)) {
      return c.cfg().Error(key, "only leading dense layers [0, 1, ..., k-1] are modelled");
    }
  }
  return static_cast<int64_t>(raw->size());
}

Status MapQwen3Moe(ArchContext& c) {
  CAPPLAN_RETURN_IF_ERROR(MapQwen3(c));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("n_routed_experts", "num_experts"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("experts_per_token", "num_experts_per_tok"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("moe_intermediate_size", "moe_intermediate_size"));
  CAPPLAN_ASSIGN_OR_RETURN(int64_t step, c.ReadInt("decoder_sparse_step", 1));
  if (step != 1) {
    return c.cfg().Error("decoder_sparse_step", "only 1 (every layer MoE) is modelled");
  }
  CAPPLAN_ASSIGN_OR_RETURN(int64_t dense, LeadingDense(c, "mlp_only_layers"));
  c.Put("first_k_dense", dense, c.From("mlp_only_layers") + " (leading dense layers)");
  if (dense > 0) {
    CAPPLAN_RETURN_IF_ERROR(c.CopyInt("intermediate_size", "intermediate_size"));
  } else {
    c.cfg().Touch("intermediate_size");
    c.Fixed("intermediate_size", 0, c.From("mlp_only_layers") +
                                        " is empty: every layer is MoE, intermediate_size unused");
  }
  c.Fixed("n_shared_experts", 0, std::string(kTransformers) +
                                     "qwen3_moe/modeling_qwen3_moe.py (no shared expert)");
  c.Fixed("scoring_func", "softmax", std::string(kTransformers) +
                                         "qwen3_moe/modeling_qwen3_moe.py (softmax router)");
  c.Fixed("routed_scaling_factor", 1.0, "Qwen3-MoE scales routed outputs by 1");
  return Status::Ok();
}

// MoE fields of the DeepSeek-V3 lineage (also GLM-4.5 and GLM-5).
Status MapDeepseekMoe(ArchContext& c, const char* default_scoring) {
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("intermediate_size", "intermediate_size"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("first_k_dense", "first_k_dense_replace", 0, 0));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("n_routed_experts", "n_routed_experts"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("experts_per_token", "num_experts_per_tok"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("n_shared_experts", "n_shared_experts", 0, 0));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("moe_intermediate_size", "moe_intermediate_size"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyDouble("routed_scaling_factor", "routed_scaling_factor", 1.0));
  CAPPLAN_ASSIGN_OR_RETURN(int64_t freq, c.ReadInt("moe_layer_freq", 1));
  if (freq != 1) return c.cfg().Error("moe_layer_freq", "only 1 (every layer after the dense ones) is modelled");
  std::string scoring = default_scoring;
  CAPPLAN_RETURN_IF_ERROR(c.cfg().Get("scoring_func", &scoring));
  CAPPLAN_RETURN_IF_ERROR(c.cfg().CheckOneOf("scoring_func", scoring, {"softmax", "sigmoid"}));
  c.Put("scoring_func", scoring,
        c.cfg().Has("scoring_func") ? c.From("scoring_func")
                                    : c.From("scoring_func") + " absent: the family's default");
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("mtp_layers", "num_nextn_predict_layers", 0, 0));
  return Status::Ok();
}

Status MapMla(ArchContext& c) {
  c.Fixed("attention", "mla", "multi-head latent attention (DeepSeek-V2 modeling code)");
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("q_lora_rank", "q_lora_rank", 0, 0));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("kv_lora_rank", "kv_lora_rank"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("qk_nope_head_dim", "qk_nope_head_dim"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("qk_rope_head_dim", "qk_rope_head_dim"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("v_head_dim", "v_head_dim"));
  c.cfg().Touch("num_key_value_heads");  // MLA caches one latent, whatever it says
  c.cfg().Touch("head_dim");             // qk_nope + qk_rope for MLA
  return RefuseTrue(c, "attention_bias", "attention biases on MLA are not modelled");
}

Status MapDeepseekV2(ArchContext& c) {
  CAPPLAN_RETURN_IF_ERROR(MapCommon(c));
  CAPPLAN_RETURN_IF_ERROR(MapMla(c));
  return MapDeepseekMoe(c, "softmax");
}

Status MapDeepseekV3(ArchContext& c) {
  CAPPLAN_RETURN_IF_ERROR(MapCommon(c));
  CAPPLAN_RETURN_IF_ERROR(MapMla(c));
  return MapDeepseekMoe(c, "sigmoid");
}

// DSA indexer: DeepSeek-V3.2 and GLM-5 (glm_moe_dsa).
Status MapDsa(ArchContext& c) {
  CAPPLAN_RETURN_IF_ERROR(MapDeepseekV3(c));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("index_n_heads", "index_n_heads"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("index_head_dim", "index_head_dim"));
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("index_topk", "index_topk"));
  c.cfg().Touch("indexer_rope_interleave");
  return Status::Ok();
}

Status MapGlm4Moe(ArchContext& c) {
  CAPPLAN_RETURN_IF_ERROR(MapCommon(c));
  CAPPLAN_RETURN_IF_ERROR(MapGqa(c));
  CAPPLAN_RETURN_IF_ERROR(c.CopyBool("qk_norm", "use_qk_norm", false));
  CAPPLAN_ASSIGN_OR_RETURN(bool bias, c.ReadBool("attention_bias", false));
  c.Put("attention_bias", bias ? "qkv" : "none",
        c.From("attention_bias") + " (" + kTransformers +
            "glm4_moe/modeling_glm4_moe.py: q, k, v biases; o_proj has none)");
  return MapDeepseekMoe(c, "sigmoid");
}

Status MapGptOss(ArchContext& c) {
  CAPPLAN_RETURN_IF_ERROR(MapCommon(c));
  CAPPLAN_RETURN_IF_ERROR(MapGqa(c));
  const std::string modeling = std::string(kTransformers) + "gpt_oss/modeling_gpt_oss.py";
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("n_routed_experts", "num_local_experts"));
  const char* topk = c.cfg().Has("num_experts_per_tok") ? "num_experts_per_tok" : "experts_per_token";
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("experts_per_token", topk));
  c.cfg().Touch("experts_per_token");
  CAPPLAN_RETURN_IF_ERROR(c.CopyInt("moe_intermediate_size", "intermediate_size"));
  c.Fixed("intermediate_size", 0, "every gpt-oss layer is MoE");
  c.Fixed("first_k_dense", 0, "every gpt-oss layer is MoE");
  c.Fixed("n_shared_experts", 0, modeling + " (no shared expert)");
  c.Fixed("scoring_func", "softmax", modeling + " (softmax over the top-k router logits)");
  c.Fixed("routed_scaling_factor", 1.0, modeling);
  c.Fixed("moe_bias", true, modeling + " (router bias; gate_up_proj_bias, down_proj_bias)");
  c.Fixed("attention_sinks", true, modeling + " (self_attn.sinks: one per head)");
  CAPPLAN_ASSIGN_OR_RETURN(bool bias, c.ReadBool("attention_bias", true));
  c.Put("attention_bias", bias ? "qkvo" : "none", c.From("attention_bias"));
  c.Fixed("mtp_layers", 0, "gpt-oss ships no MTP layers");
  // Sliding-window layers: counted from layer_types.
  const nlohmann::json* types = c.cfg().Raw("layer_types");
  int64_t sliding = 0;
  if (types != nullptr && !types->is_null()) {
    if (!types->is_array()) return c.cfg().Error("layer_types", "must be a list");
    for (const auto& t : *types) {
      const std::string s = t.is_string() ? t.get<std::string>() : "";
      if (s == "sliding_attention") {
        ++sliding;
      } else if (s != "full_attention") {
        return c.cfg().Error("layer_types", "unknown layer type '" + t.dump() +
                                                "' (known: sliding_attention, full_attention)");
      }
    }
  }
  if (sliding > 0) {
    CAPPLAN_RETURN_IF_ERROR(c.CopyInt("sliding_window", "sliding_window"));
    c.Put("sliding_window_layers", sliding, c.From("layer_types") + " (sliding_attention entries)");
  } else {
    c.cfg().Touch("sliding_window");
  }
  c.naming().router = "mlp.router";
  c.naming().fused_experts = true;
  return Status::Ok();
}

}  // namespace

const std::vector<ArchEntry>& ArchRegistry() {
  static const std::vector<ArchEntry> kRegistry = {
      {"llama", MapLlama},         {"qwen3", MapQwen3Dense},
      {"qwen3_moe", MapQwen3Moe},  {"deepseek_v2", MapDeepseekV2},
      {"deepseek_v3", MapDeepseekV3}, {"kimi_k2", MapDeepseekV3},
      {"deepseek_v32", MapDsa},    {"glm_moe_dsa", MapDsa},
      {"glm4_moe", MapGlm4Moe},    {"gpt_oss", MapGptOss},
      {"qwen3_next", MapQwen3Next}, {"llama4_text", MapLlama4},
      {"llama4", MapLlama4},
  };
  return kRegistry;
}

const std::vector<std::string>& IrrelevantConfigKeys() {
  static const std::vector<std::string> kKeys = {
      "architectures", "model_type", "auto_map", "transformers_version", "_name_or_path",
      "bos_token_id", "eos_token_id", "pad_token_id", "hidden_act", "initializer_range",
      "rms_norm_eps", "layer_norm_eps", "rope_theta", "rope_scaling", "rope_parameters",
      "rope_interleave", "partial_rotary_factor", "attention_dropout", "use_cache",
      "output_router_logits", "router_aux_loss_coef", "aux_loss_alpha", "seq_aux",
      "norm_topk_prob", "topk_method", "n_group", "topk_group", "ep_size", "max_window_layers",
      "initial_context_length", "swiglu_limit", "use_sdpa", "tokenizer_class", "generation_config",
      "moe_router_dtype", "pretraining_tp", "torch_dtype", "dtype", "quantization_config",
  };
  return kKeys;
}

}  // namespace capplan::models::hf
