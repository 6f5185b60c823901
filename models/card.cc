#include "models/card.h"

#include <algorithm>
#include <filesystem>

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "common/did_you_mean.h"
#include "common/json_util.h"
#include "models/card_layers.h"
#include "models/hf_import.h"

namespace capplan::models {

namespace {

// Upper bounds that catch typos (an extra zero) without rejecting any real
// model; they are sanity limits, not facts.
constexpr double kMaxDim = 1 << 20;
constexpr double kMaxLayers = 1000;

// A checkpoint entry states its scale layout; what it may leave out comes
// from the format's row (hw/formats.json): the scale format always, and the
// whole layout when the format fixes it (NVFP4 and MXFP4 scale every 16 or
// 32 weights, whatever the checkpoint).
Status ReadFormat(JsonObject& o, WeightFormat* w) {
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  std::string dtype;
  CAPPLAN_RETURN_IF_ERROR(o.Get("dtype", &dtype, true));
  auto d = ParseDtype(dtype);
  if (!d.ok()) return o.Error("dtype", d.status().message());
  const WeightFormat row = WeightFormatOf(*d);
  const hw::ScaleLayout& scale = hw::Formats().Row(*d).scale;
  const bool fixed = scale.granularity == "group" && DtypeFamily(*d) != Dtype::kInt4;
  *w = fixed ? row : WeightFormat{};
  w->dtype = *d;
  w->scale_dtype = row.scale_dtype;
  CAPPLAN_RETURN_IF_ERROR(o.Get("block_rows", &w->block_rows));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("block_rows", w->block_rows, 0, 65536));
  CAPPLAN_RETURN_IF_ERROR(o.Get("block_cols", &w->block_cols));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("block_cols", w->block_cols, 0, 65536));
  CAPPLAN_RETURN_IF_ERROR(o.Get("group_size", &w->group_size));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("group_size", w->group_size, 0, 65536));
  CAPPLAN_RETURN_IF_ERROR(o.Get("symmetric", &w->symmetric));
  std::string scale_name = DtypeName(w->scale_dtype);
  CAPPLAN_RETURN_IF_ERROR(o.Get("scale_dtype", &scale_name));
  auto sd = ParseDtype(scale_name);
  if (!sd.ok()) return o.Error("scale_dtype", sd.status().message());
  w->scale_dtype = *sd;
  if (scale.granularity == "group" && w->group_size <= 0) {
    return o.Error("group_size", dtype + " weights need a group_size (" +
                                     std::to_string(row.group_size) + " in " + dtype + "'s recipe)");
  }
  if (fixed && (w->group_size != row.group_size || w->scale_dtype != row.scale_dtype)) {
    return o.Error("group_size", dtype + " fixes its scales: one " + DtypeName(row.scale_dtype) +
                                     " per " + std::to_string(row.group_size) + " weights");
  }
  if ((w->block_rows == 0) != (w->block_cols == 0)) {
    return o.Error("block_cols", "give both block_rows and block_cols, or neither");
  }
  return o.Finish();
}

}  // namespace

std::vector<std::string> ShippedModelNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(DataPath("models/cards"), ec)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<ModelCard> LoadModelCard(const std::string& name_or_path) {
  std::string path = name_or_path;
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       name_or_path.ends_with(".json");
  if (!is_path) {
    path = DataPath("models/cards/" + name_or_path + ".json");
    std::error_code ec;
    // A name too long for the file system is simply not a shipped one.
    if (!std::filesystem::is_regular_file(path, ec)) {
      return Status::NotFound("unknown model '" + EchoValue(name_or_path) + "'" +
                              DidYouMean(name_or_path, ShippedModelNames()) +
                              " (or pass a path to a card .json)");
    }
  }
  if (is_path && IsHfModelPath(path)) {
    CAPPLAN_ASSIGN_OR_RETURN(HfImport imported, ImportHfModel(path));
    return ParseModelCard(imported.card_json, path);
  }
  CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseModelCard(text, path);
}

namespace {

struct IntField {
  const char* key;
  int* out;
  double lo, hi;
};

// The optional dimensions and flags, each range-checked.
Status ReadOptionalFields(JsonObject& o, ModelCard* card) {
  ModelCard& c = *card;
  const IntField optional[] = {
      {"mtp_layers", &c.mtp_layers, 0, 64},
      {"num_kv_heads", &c.num_kv_heads, 0, 4096},
      {"head_dim", &c.head_dim, 0, 65536},
      {"q_lora_rank", &c.q_lora_rank, 0, kMaxDim},
      {"kv_lora_rank", &c.kv_lora_rank, 0, kMaxDim},
      {"qk_nope_head_dim", &c.qk_nope_head_dim, 0, 65536},
      {"qk_rope_head_dim", &c.qk_rope_head_dim, 0, 65536},
      {"v_head_dim", &c.v_head_dim, 0, 65536},
      {"index_n_heads", &c.index_n_heads, 0, 4096},
      {"index_head_dim", &c.index_head_dim, 0, 65536},
      {"index_topk", &c.index_topk, 0, 1 << 24},
      {"index_share_every", &c.index_share_every, 0, kMaxLayers},
      {"intermediate_size", &c.intermediate_size, 0, kMaxDim},
      {"first_k_dense", &c.first_k_dense, 0, kMaxLayers},
      {"n_routed_experts", &c.n_routed_experts, 0, 65536},
      {"experts_per_token", &c.experts_per_token, 0, 4096},
      {"n_shared_experts", &c.n_shared_experts, 0, 64},
      {"moe_intermediate_size", &c.moe_intermediate_size, 0, kMaxDim},
      {"sliding_window", &c.sliding_window, 0, 1 << 24},
      {"sliding_window_layers", &c.sliding_window_layers, 0, kMaxLayers},
  };
  for (const auto& f : optional) {
    CAPPLAN_RETURN_IF_ERROR(o.Get(f.key, f.out));
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange(f.key, *f.out, f.lo, f.hi));
  }
  CAPPLAN_RETURN_IF_ERROR(o.Get("tie_word_embeddings", &c.tie_word_embeddings));
  CAPPLAN_RETURN_IF_ERROR(o.Get("qk_norm", &c.qk_norm));
  CAPPLAN_RETURN_IF_ERROR(o.Get("attention_sinks", &c.attention_sinks));
  CAPPLAN_RETURN_IF_ERROR(o.Get("moe_bias", &c.moe_bias));
  std::string bias = "none";
  CAPPLAN_RETURN_IF_ERROR(o.Get("attention_bias", &bias));
  CAPPLAN_RETURN_IF_ERROR(o.CheckOneOf("attention_bias", bias, {"none", "qkv", "qkvo"}));
  c.qkv_bias = bias != "none";
  c.o_bias = bias == "qkvo";
  CAPPLAN_RETURN_IF_ERROR(o.Get("max_position_embeddings", &c.max_position_embeddings, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("max_position_embeddings",
                                       static_cast<double>(c.max_position_embeddings), 1,
                                       1LL << 32));
  CAPPLAN_RETURN_IF_ERROR(o.Get("routed_scaling_factor", &c.routed_scaling_factor));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("routed_scaling_factor", c.routed_scaling_factor, 0, 1e3));
  CAPPLAN_RETURN_IF_ERROR(o.Get("scoring_func", &c.scoring_func));
  CAPPLAN_RETURN_IF_ERROR(o.CheckOneOf("scoring_func", c.scoring_func, {"softmax", "sigmoid"}));

  return Status::Ok();
}

// The checkpoint's formats and the components each weight choice
// re-quantizes.
Status ReadPrecision(JsonObject& o, ModelCard* card) {
  ModelCard& c = *card;
  // Checkpoint precision; components not listed are BF16.
  for (Component comp : AllComponents()) c.checkpoint[comp] = WeightFormat{};
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject ckpt, o.Child("checkpoint", true));
  for (const auto& [key, value] : ckpt.json().items()) {
    auto comp = ParseComponent(key);
    if (!comp.ok()) return ckpt.Error(key, comp.status().message());
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject f, ckpt.Child(key, true));
    CAPPLAN_RETURN_IF_ERROR(ReadFormat(f, &c.checkpoint[*comp]));
  }
  std::vector<std::string> quantizable;
  CAPPLAN_RETURN_IF_ERROR(o.Get("quantizable", &quantizable, true));
  for (const auto& q : quantizable) {
    auto comp = ParseComponent(q);
    if (!comp.ok()) return o.Error("quantizable", comp.status().message());
    c.quantizable.push_back(*comp);
  }
  if (o.Has("quantize")) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject qz, o.Child("quantize", true));
    for (const std::string& format : WeightChoiceNames()) {
      if (format == "default" || !qz.Has(format)) continue;
      CAPPLAN_ASSIGN_OR_RETURN(JsonObject f, qz.Child(format, true));
      std::vector<std::string> names;
      CAPPLAN_RETURN_IF_ERROR(f.Get("components", &names, true));
      CAPPLAN_RETURN_IF_ERROR(f.Get("source", &c.quantize_source[format], true));
      std::vector<Component>& out = c.quantize_by_format[format];
      for (const auto& n : names) {
        auto comp = ParseComponent(n);
        if (!comp.ok()) return f.Error("components", comp.status().message());
        out.push_back(*comp);
      }
      CAPPLAN_RETURN_IF_ERROR(f.Finish());
    }
    CAPPLAN_RETURN_IF_ERROR(qz.Finish());
  }
  return Status::Ok();
}

// Checks across fields, after every field was read: the architecture must
// be self-consistent.
Status CheckArchitecture(const JsonObject& o, const ModelCard& c) {
  if (c.attention == AttentionKind::kGqa) {
    if (c.num_kv_heads <= 0) return o.Error("num_kv_heads", "gqa attention needs num_kv_heads > 0");
    if (c.head_dim <= 0) return o.Error("head_dim", "gqa attention needs head_dim > 0");
    if (c.num_heads % c.num_kv_heads != 0) {
      return o.Error("num_kv_heads", "must divide num_heads (" + std::to_string(c.num_heads) + ")");
    }
  } else {
    if (c.qk_norm) return o.Error("qk_norm", "only meaningful for gqa attention");
    const std::pair<const char*, int> mla[] = {{"kv_lora_rank", c.kv_lora_rank},
                                               {"qk_nope_head_dim", c.qk_nope_head_dim},
                                               {"qk_rope_head_dim", c.qk_rope_head_dim},
                                               {"v_head_dim", c.v_head_dim}};
    for (const auto& [k, v] : mla) {
      if (v <= 0) return o.Error(k, "mla attention needs " + std::string(k) + " > 0");
    }
  }
  if (c.sliding_window_layers > c.num_layers) {
    return o.Error("sliding_window_layers", "must not exceed num_layers");
  }
  if ((c.sliding_window > 0) != (c.sliding_window_layers > 0)) {
    return o.Error("sliding_window_layers", "give both sliding_window and sliding_window_layers "
                                            "(> 0), or neither");
  }
  if (c.moe_bias && !c.IsMoe()) return o.Error("moe_bias", "only meaningful for MoE models");
  if (c.attention == AttentionKind::kMla && (c.qkv_bias || c.attention_sinks)) {
    return o.Error("attention_bias", "attention biases and sinks are modelled for gqa attention");
  }
  if (c.index_topk > 0 && (c.index_n_heads <= 0 || c.index_head_dim <= 0)) {
    return o.Error("index_head_dim", "a DSA indexer (index_topk > 0) needs index_n_heads and "
                                     "index_head_dim > 0");
  }
  if (c.IsMoe()) {
    if (c.experts_per_token <= 0 || c.experts_per_token > c.n_routed_experts) {
      return o.Error("experts_per_token", "must be in [1, n_routed_experts]");
    }
    if (c.moe_intermediate_size <= 0) {
      return o.Error("moe_intermediate_size", "an MoE model needs moe_intermediate_size > 0");
    }
    if (c.first_k_dense >= c.num_layers) {
      return o.Error("first_k_dense", "must be below num_layers");
    }
  } else if (c.first_k_dense != 0) {
    return o.Error("first_k_dense", "only meaningful for MoE models (n_routed_experts > 0)");
  }
  if (c.NumDenseLayers() > 0 && c.intermediate_size <= 0) {
    return o.Error("intermediate_size", "dense FFN layers need intermediate_size > 0");
  }
  return Status::Ok();
}

}  // namespace

Result<ModelCard> ParseModelCard(const std::string& json_text, const std::string& origin) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(json_text, origin));
  JsonObject o(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  ModelCard c;
  CAPPLAN_RETURN_IF_ERROR(o.CheckFormat("capplan.model_card.v1"));
  o.Touch("notes");
  // Where each value came from, for cards written by `capplan import-model`.
  o.Touch("value_sources");
  CAPPLAN_RETURN_IF_ERROR(o.Get("name", &c.name, true));
  c.display_name = c.name;
  CAPPLAN_RETURN_IF_ERROR(o.Get("display_name", &c.display_name));
  CAPPLAN_RETURN_IF_ERROR(o.Get("sources", &c.sources, true));
  if (c.sources.empty()) return o.Error("sources", "a card must name at least one source");

  // Required positive dimensions.
  const IntField required[] = {
      {"num_layers", &c.num_layers, 1, kMaxLayers},
      {"hidden_size", &c.hidden_size, 1, kMaxDim},
      {"vocab_size", &c.vocab_size, 1, 1 << 24},
      {"num_heads", &c.num_heads, 1, 4096},
  };
  // Read now, checked after Finish() so a misspelt key is reported as such
  // rather than as the missing field it was meant to be.
  for (const auto& f : required) CAPPLAN_RETURN_IF_ERROR(o.Get(f.key, f.out));
  CAPPLAN_RETURN_IF_ERROR(ReadOptionalFields(o, &c));
  std::string attention;
  CAPPLAN_RETURN_IF_ERROR(o.Get("attention", &attention, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckOneOf("attention", attention, {"gqa", "mla"}));
  c.attention = attention == "mla" ? AttentionKind::kMla : AttentionKind::kGqa;

  CAPPLAN_RETURN_IF_ERROR(ReadPrecision(o, &c));
  CAPPLAN_RETURN_IF_ERROR(ParseLayerStructure(o, &c));
  // Unknown keys first: a misspelt field would otherwise surface as a
  // confusing cross-field error about the field it was meant to be.
  CAPPLAN_RETURN_IF_ERROR(o.Finish());
  for (const auto& f : required) {
    if (!o.Has(f.key)) return o.Error(f.key, "required field is missing");
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange(f.key, *f.out, f.lo, f.hi));
  }

  CAPPLAN_RETURN_IF_ERROR(CheckArchitecture(o, c));
  CAPPLAN_RETURN_IF_ERROR(CheckLayerStructure(o, c));

  return c;
}

Result<ModelCard> DraftCard(const ModelCard& card, DraftKind kind, int layers) {
  ModelCard d = card;
  d.mtp_layers = 0;
  switch (kind) {
    case DraftKind::kMtp:
      if (card.mtp_layers < 1) {
        return Status::Invalid(card.name +
                               " has no MTP layers (mtp_layers 0); use method \"eagle\" "
                               "with a draft head, or a model that ships MTP layers");
      }
      if (layers > card.mtp_layers) {
        return Status::Invalid(card.name + " has " + std::to_string(card.mtp_layers) +
                               " MTP layer(s), not " + std::to_string(layers));
      }
      d.num_layers = layers > 0 ? layers : card.mtp_layers;
      d.first_k_dense = 0;  // MoE like the layers they follow
      break;
    case DraftKind::kEagle:
      d.num_layers = layers > 0 ? layers : 1;
      if (card.IsMoe()) {
        if (card.intermediate_size < 1) {
          return Status::Invalid(card.name + " has no dense FFN size for an EAGLE head");
        }
        d.first_k_dense = d.num_layers;  // every layer dense
      }
      break;
    case DraftKind::kNone:
      return Status::Invalid("no draft model without speculative decoding");
  }
  d.name = card.name + ".draft";
  return d;
}

}  // namespace capplan::models
