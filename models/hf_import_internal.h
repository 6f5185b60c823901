// Pieces of the Hugging Face importer shared by its files: the card under
// construction, the per-architecture mappings, the HF module names of a card
// and the quantization-config rules.
#ifndef CAPPLAN_MODELS_HF_IMPORT_INTERNAL_H_
#define CAPPLAN_MODELS_HF_IMPORT_INTERNAL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <regex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_util.h"
#include "common/status.h"
#include "models/card.h"
#include "models/types.h"

namespace capplan::models::hf {

// How an architecture names its linear modules in the checkpoint.
struct ModuleNaming {
  std::string layer_prefix = "model.layers.";
  std::string ffn = "mlp";                 // Llama 4: feed_forward
  std::string router = "mlp.gate";
  std::string shared_expert = "mlp.shared_experts";  // Qwen3-Next: mlp.shared_expert
  std::string shared_expert_gate;          // Qwen3-Next: mlp.shared_expert_gate
  bool fused_experts = false;  // gpt-oss, Llama 4: <ffn>.experts.gate_up_proj, one tensor per layer
  std::string embed_tokens = "model.embed_tokens";
  std::string lm_head = "lm_head";
};

// The text model's config object being mapped onto a card, recording the
// source of every value it writes.
class ArchContext {
 public:
  ArchContext(JsonObject* cfg, std::string label) : cfg_(cfg), label_(std::move(label)) {}

  JsonObject& cfg() { return *cfg_; }
  const std::string& label() const { return label_; }
  nlohmann::ordered_json& card() { return card_; }
  nlohmann::ordered_json& value_sources() { return sources_; }
  ModuleNaming& naming() { return naming_; }
  std::string& torch_dtype() { return torch_dtype_; }

  void Put(const std::string& card_key, const nlohmann::ordered_json& value,
           const std::string& source);
  // card_key := config[hf_key]; absent or null gives `fallback` (an error
  // when none). `lo` is the smallest value accepted.
  Status CopyInt(const std::string& card_key, const std::string& hf_key,
                 std::optional<int64_t> fallback = std::nullopt, int64_t lo = 1);
  Status CopyBool(const std::string& card_key, const std::string& hf_key, bool fallback);
  Status CopyDouble(const std::string& card_key, const std::string& hf_key, double fallback);
  // Reads an integer without writing it to the card.
  Result<int64_t> ReadInt(const std::string& hf_key, std::optional<int64_t> fallback);
  Result<bool> ReadBool(const std::string& hf_key, bool fallback);
  // A value the architecture fixes (not in config.json), with its source.
  void Fixed(const std::string& card_key, const nlohmann::ordered_json& value,
             const std::string& why) {
    Put(card_key, value, why);
  }
  // "<label> <key>": the source string of a config value.
  std::string From(const std::string& hf_key) const { return label_ + " " + hf_key; }

 private:
  JsonObject* cfg_;
  std::string label_;
  nlohmann::ordered_json card_ = nlohmann::ordered_json::object();
  nlohmann::ordered_json sources_ = nlohmann::ordered_json::object();
  ModuleNaming naming_;
  std::string torch_dtype_ = "bf16";
};

// One architecture: maps config keys onto the card, or refuses with a reason.
using ArchMapper = Status (*)(ArchContext&);
struct ArchEntry {
  const char* model_type;
  ArchMapper map;
};
const std::vector<ArchEntry>& ArchRegistry();
// Fields every decoder-only family spells the same way (layers, hidden,
// vocab, heads, positions, tied embeddings).
Status MapCommonDecoder(ArchContext& c);
// GQA attention: kv heads default to the query heads, head_dim to
// hidden / heads (transformers LlamaConfig).
Status MapGqaAttention(ArchContext& c);
// Architectures with layers of more than one kind (hf_arch_hybrid.cc).
Status MapQwen3Next(ArchContext& c);
Status MapLlama4(ArchContext& c);
// Config keys no architecture reads because they change neither memory nor
// compute as capplan models them (token ids, init, dropout, RoPE bases).
const std::vector<std::string>& IrrelevantConfigKeys();

// A linear module of the checkpoint, as quantization configs name it.
struct HfModule {
  std::string name;  // "model.layers.3.mlp.experts.17.down_proj"
  Component component;
  bool served = true;  // false: an MTP layer, not loaded for serving
};
std::vector<HfModule> ListHfModules(const ModelCard& card, const ModuleNaming& naming);

// Whether a module-name pattern from a quantization config names `module`:
// "re:<regex>" matches from the start of the name; a pattern with * or ?
// is a glob over the name or any dotted prefix of it; any other pattern
// names a dotted segment run ("self_attn", "mlp.gate", "lm_head").
class ModulePattern {
 public:
  // Usage error for a "re:" pattern that is not a valid regex.
  static Result<ModulePattern> Make(const std::string& text);
  bool Matches(const std::string& module) const;
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::shared_ptr<const std::regex> re_;
};
bool PatternMatches(const std::string& pattern, const std::string& module);

// The quantization config as found: its file, the JSON pointer of the
// object, and the object.
struct QuantSource {
  std::string path;
  std::string pointer;
  nlohmann::json json;
};

// The checkpoint format of each component the config quantizes, in the
// card's format vocabulary ({"dtype": "fp8", "block_rows": 128, ...}).
struct QuantPlan {
  std::string method;
  std::map<Component, nlohmann::ordered_json> formats;
  std::map<Component, std::string> sources;  // the rule that decided each
};
Result<QuantPlan> PlanQuantization(const QuantSource& q, const ModelCard& card,
                                   const ModuleNaming& naming,
                                   const std::vector<std::string>& index_modules);
std::vector<std::string> QuantMethodNames();

}  // namespace capplan::models::hf

#endif  // CAPPLAN_MODELS_HF_IMPORT_INTERNAL_H_
