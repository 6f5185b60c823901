// Reads a Hugging Face model folder and writes a model card (hf_import.h).
#include "models/hf_import.h"

#include <filesystem>

#include "common/json_util.h"
#include "models/card.h"
#include "models/hf_import_internal.h"

namespace capplan::models {

namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

constexpr const char* kConfig = "config.json";
constexpr const char* kIndex = "model.safetensors.index.json";

struct Folder {
  std::string dir;
  std::string config_path;
  nlohmann::json config;
};

Result<Folder> OpenFolder(const std::string& path) {
  std::error_code ec;
  Folder f;
  if (!fs::exists(path, ec)) {
    return Status::NotFound(path + ": no such model folder or config.json");
  }
  f.dir = fs::is_directory(path, ec) ? path : fs::path(path).parent_path().string();
  if (f.dir.empty()) f.dir = ".";
  f.config_path = (fs::path(f.dir) / kConfig).string();
  if (!fs::is_regular_file(f.config_path, ec)) {
    return Status::NotFound(f.config_path + ": missing; a Hugging Face model folder has a " +
                            kConfig + " (pass the folder or its config.json)");
  }
  CAPPLAN_ASSIGN_OR_RETURN(f.config, ReadJsonFile(f.config_path));
  if (!f.config.is_object()) return Status::Usage(f.config_path + ": must be a JSON object");
  return f;
}

Result<std::string> CheckpointDtype(const nlohmann::json& cfg, const nlohmann::json& root,
                                    const std::string& path) {
  for (const nlohmann::json* j : {&cfg, &root}) {
    for (const char* key : {"torch_dtype", "dtype"}) {
      if (!j->contains(key) || !(*j)[key].is_string()) continue;
      const std::string v = (*j)[key].get<std::string>();
      if (v == "bfloat16") return std::string("bf16");
      if (v == "float16") return std::string("fp16");
      if (v == "float32") return std::string("fp32");
      return Status::Usage(path + ": /" + key + ": unknown dtype '" + EchoValue(v) +
                           "' (known: bfloat16, float16, float32)");
    }
  }
  return std::string("bf16");  // transformers' own default for these families
}

Result<std::optional<hf::QuantSource>> FindQuantConfig(const Folder& f, const std::string& pointer) {
  const nlohmann::json& text = pointer.empty() ? f.config : f.config["text_config"];
  for (const auto& [j, p] : {std::pair{&text, pointer}, std::pair{&f.config, std::string()}}) {
    if (j->contains("quantization_config") && !(*j)["quantization_config"].is_null()) {
      return std::optional<hf::QuantSource>(
          hf::QuantSource{f.config_path, p + "/quantization_config", (*j)["quantization_config"]});
    }
  }
  std::error_code ec;
  const std::string modelopt = (fs::path(f.dir) / "hf_quant_config.json").string();
  if (fs::is_regular_file(modelopt, ec)) {
    CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(modelopt));
    if (!doc.is_object() || !doc.contains("quantization") || !doc["quantization"].is_object()) {
      return Status::Usage(modelopt + ": /quantization: required object is missing");
    }
    nlohmann::json q = doc["quantization"];
    q["quant_method"] = "modelopt";
    return std::optional<hf::QuantSource>(hf::QuantSource{modelopt, "/quantization", q});
  }
  const std::string generic = (fs::path(f.dir) / "quant_config.json").string();
  if (fs::is_regular_file(generic, ec)) {
    CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(generic));
    return std::optional<hf::QuantSource>(hf::QuantSource{generic, "", doc});
  }
  return std::optional<hf::QuantSource>();
}

// The index's total size and its module names (tensor names less the last
// dotted part: .weight, .weight_scale_inv, _blocks ...).
Status ReadIndex(const Folder& f, HfImport* out, std::vector<std::string>* modules) {
  std::error_code ec;
  const std::string path = (fs::path(f.dir) / kIndex).string();
  if (!fs::is_regular_file(path, ec)) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  JsonObject o(doc, path, "");
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject meta, o.Child("metadata", true));
  int64_t total = 0;
  CAPPLAN_RETURN_IF_ERROR(meta.Get("total_size", &total, true));
  CAPPLAN_RETURN_IF_ERROR(meta.CheckRange("total_size", static_cast<double>(total), 1, 1e15));
  const nlohmann::json* map = o.Raw("weight_map");
  if (map == nullptr || !map->is_object()) return o.Error("weight_map", "required object is missing");
  for (const auto& [name, file] : map->items()) {
    const size_t dot = name.rfind('.');
    modules->push_back(dot == std::string::npos ? name : name.substr(0, dot));
  }
  out->index_total_size = total;
  out->index_path = path;
  out->index_tensors = static_cast<int64_t>(map->size());
  return Status::Ok();
}

Result<const hf::ArchEntry*> FindArch(const nlohmann::json& cfg, const std::string& path,
                                      const std::string& pointer) {
  if (!cfg.contains("model_type") || !cfg["model_type"].is_string()) {
    return Status::Usage(path + ": " + pointer + "/model_type: required string is missing");
  }
  const std::string type = cfg["model_type"].get<std::string>();
  for (const hf::ArchEntry& e : hf::ArchRegistry()) {
    if (type == e.model_type) return &e;
  }
  std::string known;
  for (const std::string& n : HfKnownModelTypes()) known += (known.empty() ? "" : ", ") + n;
  return Status::Usage(path + ": " + pointer + "/model_type: unknown architecture '" + type +
                       "' (known: " + known + ")");
}

std::vector<std::string> Quantizable(const ojson& card) {
  if (card.value("n_routed_experts", 0) > 0) {
    return {"attention", "experts", "shared_experts", "dense_ffn"};
  }
  return {"attention", "dense_ffn"};
}

// The card document: identity, the mapped fields, checkpoint formats.
ojson CardDocument(const std::string& name, const Folder& f, hf::ArchContext& ctx,
                   const std::map<Component, ojson>& formats,
                   const std::map<Component, std::string>& format_sources) {
  ojson doc;
  doc["format"] = "capplan.model_card.v1";
  doc["name"] = name;
  doc["display_name"] = name;
  ojson sources = ojson::array({f.config_path + " (read by capplan import-model)"});
  if (f.config.contains("_name_or_path") && f.config["_name_or_path"].is_string()) {
    sources.push_back("https://huggingface.co/" + f.config["_name_or_path"].get<std::string>());
  }
  doc["sources"] = sources;
  std::string notes = "Imported from a Hugging Face config; value_sources names the file and "
                      "key of every value. MTP layers are not served weights.";
  if (f.config.contains("text_config")) notes += " Text model only (text_config).";
  if (ctx.card().value("sliding_window_layers", 0) > 0) {
    notes += " How much KV the window-limited layers hold is the serving engine's rule.";
  }
  if (ctx.card().contains("linear_attention")) {
    notes += " Linear-attention layers keep a recurrent state per sequence, not KV.";
  }
  doc["notes"] = notes;
  for (const auto& [k, v] : ctx.card().items()) doc[k] = v;
  ojson ckpt = ojson::object();
  for (Component c : AllComponents()) {
    auto it = formats.find(c);
    const std::string key = std::string("checkpoint.") + ComponentName(c);
    if (it != formats.end()) {
      ckpt[ComponentName(c)] = it->second;
      ctx.value_sources()[key] = format_sources.at(c);
    } else {
      ckpt[ComponentName(c)] = ojson{{"dtype", ctx.torch_dtype()}};
      ctx.value_sources()[key] = f.config_path + " torch_dtype (not quantized)";
    }
  }
  doc["checkpoint"] = ckpt;
  doc["quantizable"] = Quantizable(doc);
  doc["value_sources"] = ctx.value_sources();
  return doc;
}

Status MapConfig(hf::ArchContext* ctx, const hf::ArchEntry& arch) {
  CAPPLAN_RETURN_IF_ERROR(arch.map(*ctx));
  for (const std::string& k : hf::IrrelevantConfigKeys()) ctx->cfg().Touch(k);
  Status done = ctx->cfg().Finish();
  if (!done.ok()) {
    return Status::Usage(done.message() + " (" + arch.model_type +
                         " config key capplan does not read: it may change memory or compute, "
                         "so the import stops)");
  }
  return Status::Ok();
}

}  // namespace

bool IsHfModelPath(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) || fs::path(path).filename() == kConfig;
}

std::vector<std::string> HfKnownModelTypes() {
  std::vector<std::string> out;
  for (const hf::ArchEntry& e : hf::ArchRegistry()) out.push_back(e.model_type);
  return out;
}

std::vector<std::string> HfKnownQuantMethods() { return hf::QuantMethodNames(); }

Result<HfImport> ImportHfModel(const std::string& path, const std::string& name) {
  CAPPLAN_ASSIGN_OR_RETURN(Folder f, OpenFolder(path));
  const bool nested = f.config.contains("text_config") && f.config["text_config"].is_object();
  const std::string pointer = nested ? "/text_config" : "";
  const nlohmann::json& text = nested ? f.config["text_config"] : f.config;
  CAPPLAN_ASSIGN_OR_RETURN(const hf::ArchEntry* arch, FindArch(text, f.config_path, pointer));
  JsonObject cfg(text, f.config_path, pointer);
  hf::ArchContext ctx(&cfg, nested ? "config.json text_config" : "config.json");
  CAPPLAN_ASSIGN_OR_RETURN(ctx.torch_dtype(), CheckpointDtype(text, f.config, f.config_path));
  CAPPLAN_RETURN_IF_ERROR(MapConfig(&ctx, *arch));

  HfImport out;
  out.model_type = arch->model_type;
  std::vector<std::string> index_modules;
  CAPPLAN_RETURN_IF_ERROR(ReadIndex(f, &out, &index_modules));
  std::string card_name = name;
  if (card_name.empty()) card_name = fs::path(f.dir).lexically_normal().filename().string();
  if (card_name.empty() || card_name == ".") card_name = "imported";

  // First the card at the checkpoint's unquantized dtype, whose shapes name
  // the modules the quantization rules decide on.
  ojson doc = CardDocument(card_name, f, ctx, {}, {});
  CAPPLAN_ASSIGN_OR_RETURN(ModelCard card, ParseModelCard(doc.dump(), f.config_path + " (imported)"));
  CAPPLAN_ASSIGN_OR_RETURN(std::optional<hf::QuantSource> quant, FindQuantConfig(f, pointer));
  if (quant) {
    CAPPLAN_ASSIGN_OR_RETURN(hf::QuantPlan plan,
                             hf::PlanQuantization(*quant, card, ctx.naming(), index_modules));
    out.quant_method = plan.method;
    doc = CardDocument(card_name, f, ctx, plan.formats, plan.sources);
  }
  out.card_json = doc.dump(2) + "\n";
  return out;
}

}  // namespace capplan::models
