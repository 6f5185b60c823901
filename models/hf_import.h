// A model card from a Hugging Face model folder as published: config.json,
// its quantization config (inside config.json, hf_quant_config.json or
// quant_config.json) and, when present, model.safetensors.index.json. The
// card says where every value came from ("value_sources").
#ifndef CAPPLAN_MODELS_HF_IMPORT_H_
#define CAPPLAN_MODELS_HF_IMPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/card.h"

namespace capplan::models {

struct HfImport {
  std::string card_json;  // a capplan.model_card.v1 document
  std::string model_type;
  std::string quant_method;  // "" when unquantized
  // model.safetensors.index.json metadata.total_size, when the folder has one.
  std::optional<int64_t> index_total_size;
  std::string index_path;
  int64_t index_tensors = 0;
};

// True when `path` names a model folder (a directory) or a config.json file:
// what LoadModelCard imports instead of reading as a card.
bool IsHfModelPath(const std::string& path);

// Imports the folder (or the folder of a config.json path). `name` names the
// card; empty: the folder's name. Errors are one line naming the file and key.
Result<HfImport> ImportHfModel(const std::string& path, const std::string& name = "");

// Whole-model figures of a card, for `capplan import-model` and for checking
// an import against the checkpoint's index.
struct CardSummary {
  int64_t params_total = 0;   // served weights (MTP layers excluded)
  int64_t params_active = 0;  // per token: routed experts at top-k of n
  // Bytes of every component as shipped (values + scales), one GPU holding
  // the whole model.
  std::vector<std::pair<std::string, int64_t>> component_bytes;
  int64_t weight_bytes = 0;
  int64_t mtp_weight_bytes = 0;  // MTP layers, in the checkpoint but not served
  std::vector<std::pair<std::string, int64_t>> kv_bytes_per_token;  // per KV dtype
};
Result<CardSummary> SummarizeCard(const ModelCard& card);

// The model types ImportHfModel maps, for error messages and help.
std::vector<std::string> HfKnownModelTypes();
// The quantization methods it reads.
std::vector<std::string> HfKnownQuantMethods();

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_HF_IMPORT_H_
