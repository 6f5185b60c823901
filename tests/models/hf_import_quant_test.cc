// Quantization configs decide each component's checkpoint format from their
// own rules; bad input is a one-line error naming the file and key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "models/card.h"
#include "models/hf_import.h"
#include "tests/test_util/temp_dir.h"

namespace capplan::models {
namespace {

std::string Hf(const std::string& model) { return std::string(HF_TEST_DATA) + "/" + model; }

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// A model folder in the test's scratch directory: `model`'s config with
// `edit` applied, plus any extra files.
std::string Folder(const std::string& model, const nlohmann::json& patch,
                   const std::vector<std::pair<std::string, std::string>>& files = {}) {
  const std::string dir = test_util::TestTempPath(model);
  std::filesystem::create_directories(dir);
  nlohmann::json cfg = ReadJson(Hf(model) + "/config.json");
  cfg.merge_patch(patch);
  std::ofstream(dir + "/config.json") << cfg.dump(2);
  for (const auto& [name, text] : files) std::ofstream(dir + "/" + name) << text;
  return dir;
}

nlohmann::json Checkpoint(const std::string& dir) {
  auto imp = ImportHfModel(dir);
  EXPECT_TRUE(imp.ok()) << imp.status().message();
  if (!imp.ok()) return nlohmann::json::object();
  return nlohmann::json::parse(imp->card_json)["checkpoint"];
}

void ExpectOneLineError(const Status& s, const std::string& file, const std::string& needle) {
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(file), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
}

TEST(HfQuant, AwqQuantizesEveryDecoderLinearNotTheHead) {
  const auto ck = Checkpoint(Folder("llama-3.1-8b", {{"quantization_config",
      {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"zero_point", true},
       {"version", "gemm"}}}}));
  EXPECT_EQ(ck["attention"], (nlohmann::json{{"dtype", "int4"}, {"group_size", 128},
                                             {"symmetric", false}, {"scale_dtype", "fp16"}}));
  EXPECT_EQ(ck["dense_ffn"], ck["attention"]);
  EXPECT_EQ(ck["embeddings"]["dtype"], "bf16");
}

TEST(HfQuant, GptqSymmetricAndItsIgnoreList) {
  const auto ck = Checkpoint(Folder("qwen3-30b-a3b", {{"quantization_config",
      {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 32}, {"sym", true},
       {"desc_act", false}, {"modules_to_not_convert", {"self_attn"}}}}}));
  EXPECT_EQ(ck["experts"]["dtype"], "int4");
  EXPECT_EQ(ck["experts"]["group_size"], 32);
  EXPECT_EQ(ck["experts"]["symmetric"], true);
  EXPECT_EQ(ck["attention"]["dtype"], "bf16");
  EXPECT_EQ(ck["router"]["dtype"], "bf16");
}

TEST(HfQuant, ModeloptNvfp4FromHfQuantConfig) {
  const std::string hq = R"({"producer": {"name": "modelopt", "version": "0.29"},
    "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": null, "group_size": 16,
                     "exclude_modules": ["lm_head", "model.layers.*.self_attn*"]}})";
  const auto ck = Checkpoint(Folder("deepseek-v2-lite", nlohmann::json::object(),
                                    {{"hf_quant_config.json", hq}}));
  EXPECT_EQ(ck["experts"], (nlohmann::json{{"dtype", "nvfp4"}}));
  EXPECT_EQ(ck["shared_experts"]["dtype"], "nvfp4");
  EXPECT_EQ(ck["dense_ffn"]["dtype"], "nvfp4");
  EXPECT_EQ(ck["attention"]["dtype"], "bf16");
}

TEST(HfQuant, CompressedTensorsFp8ChannelAndTensor) {
  auto group = [](const char* strategy) {
    return nlohmann::json{{"quant_method", "compressed-tensors"}, {"format", "float-quantized"},
        {"config_groups", {{"group_0", {{"targets", {"Linear"}},
            {"weights", {{"num_bits", 8}, {"type", "float"}, {"strategy", strategy},
                         {"symmetric", true}, {"dynamic", false}}}}}}},
        {"ignore", {"lm_head"}}};
  };
  auto ck = Checkpoint(Folder("qwen3-8b", {{"quantization_config", group("channel")}}));
  EXPECT_EQ(ck["attention"]["block_rows"], 1);
  EXPECT_EQ(ck["attention"]["scale_dtype"], "bf16");
  ck = Checkpoint(Folder("qwen3-8b", {{"quantization_config", group("tensor")}}));
  EXPECT_EQ(ck["dense_ffn"], (nlohmann::json{{"dtype", "fp8"}, {"scale_dtype", "fp32"}}));
}

TEST(HfQuant, Fp8ModulesToNotConvert) {
  const auto ck = Checkpoint(Folder("deepseek-v3", {{"quantization_config",
      {{"modules_to_not_convert", {"shared_experts"}}}}}));
  EXPECT_EQ(ck["experts"]["block_rows"], 128);
  EXPECT_EQ(ck["shared_experts"]["dtype"], "bf16");
}

TEST(HfImportErrors, MissingConfigNamesTheFile) {
  const std::string dir = test_util::TestTempPath("empty");
  std::filesystem::create_directories(dir);
  auto imp = ImportHfModel(dir);
  ExpectOneLineError(imp.status(), dir + "/config.json", "missing");
  EXPECT_FALSE(LoadModelCard(dir).ok());
}

TEST(HfImportErrors, MalformedJsonNamesLineAndColumn) {
  const std::string dir = test_util::TestTempPath("bad");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << "{\"model_type\": \"llama\",\n  \"hidden_size\": }";
  ExpectOneLineError(ImportHfModel(dir).status(), "config.json", "line 2");
}

TEST(HfImportErrors, UnknownArchitectureListsTheKnownOnes) {
  ExpectOneLineError(ImportHfModel(Folder("llama-3.1-8b", {{"model_type", "mamba"}})).status(),
                     "/model_type", "unknown architecture 'mamba' (known: llama, qwen3");
}

TEST(HfImportErrors, UnknownKeyIsRefusedNotIgnored) {
  ExpectOneLineError(
      ImportHfModel(Folder("llama-3.1-8b", {{"attention_variant", "differential"}})).status(),
      "/attention_variant", "may change memory or compute");
}

TEST(HfImportErrors, UnknownQuantMethodListsTheKnownOnes) {
  ExpectOneLineError(
      ImportHfModel(Folder("llama-3.1-8b", {{"quantization_config", {{"quant_method", "hqq"}}}}))
          .status(),
      "/quantization_config/quant_method", "unknown quantization method 'hqq' (known: fp8");
}

TEST(HfImportErrors, PatternThatMatchesNothing) {
  ExpectOneLineError(
      ImportHfModel(Folder("gpt-oss-120b", {{"quantization_config",
                                             {{"modules_to_not_convert", {"model.vision_tower"}}}}}))
          .status(),
      "/quantization_config/modules_to_not_convert", "'model.vision_tower' matches no module");
}

TEST(HfImportErrors, PartlyQuantizedComponent) {
  ExpectOneLineError(
      ImportHfModel(Folder("llama-3.1-8b", {{"quantization_config",
          {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128},
           {"modules_to_not_convert", {"self_attn.o_proj"}}}}}))
          .status(),
      "modules_to_not_convert", "component 'attention' is partly quantized");
}

TEST(HfImportErrors, HybridLayerPatternOutsideTheIntervalIsRefused) {
  ExpectOneLineError(
      ImportHfModel(Folder("qwen3-next-80b-a3b", {{"full_attention_interval", 3}})).status(),
      "/layer_types", "only one full_attention layer every full_attention_interval");
}

TEST(HfImportErrors, UnsupportedLayerPlacement) {
  ExpectOneLineError(
      ImportHfModel(Folder("qwen3-30b-a3b", {{"mlp_only_layers", {0, 5}}})).status(),
      "/mlp_only_layers", "leading dense layers");
}

}  // namespace
}  // namespace capplan::models
