// `capplan import-model` as a user runs it: every shipped config imports,
// the written card loads in `capplan capacity`, a model folder is accepted
// where a card name is, and refusals are one line with exit code 2.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/test_util/shell.h"
#include "tests/test_util/temp_dir.h"

namespace {

using capplan::test_util::Sh;
using capplan::test_util::TestTempPath;

std::string Hf(const std::string& model) { return std::string(HF_TEST_DATA) + "/" + model; }
std::string Bin() { return std::string(CAPPLAN_BIN); }

TEST(ImportModelCli, EveryShippedConfigImportsAndItsCardPlans) {
  for (const char* m : {"deepseek-v2-lite", "deepseek-v3", "glm-4.6", "glm-5.2", "kimi-k2.6",
                        "llama-3.1-8b", "llama-3.1-70b", "llama-3.3-70b", "qwen3-8b",
                        "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-120b",
                        "qwen3-next-80b-a3b", "llama-4-scout-17b-16e-instruct",
                        "llama-4-maverick-17b-128e-instruct"}) {
    SCOPED_TRACE(m);
    const std::string card = TestTempPath(std::string(m) + ".json");
    std::string out;
    ASSERT_EQ(Sh(Bin() + " import-model " + Hf(m) + " --out " + card, &out), 0) << out;
    EXPECT_NE(out.find("parameters:"), std::string::npos) << out;
    EXPECT_NE(out.find("KV bytes per token"), std::string::npos) << out;
    std::ifstream in(card);
    const auto doc = nlohmann::json::parse(in);
    EXPECT_EQ(doc["name"], m);
    EXPECT_TRUE(doc.contains("value_sources"));
    // The card plans: it fits 8 H200s, or says by how much it does not
    // (GLM-5.2 in BF16 needs 177 GiB per GPU).
    const int code = Sh(Bin() + " capacity --model " + card + " --gpus 8 --json", &out);
    EXPECT_TRUE(code == 0 || (code == 1 && out.find("short per GPU") != std::string::npos)) << out;
  }
}

TEST(ImportModelCli, CapacityTakesTheModelFolder) {
  std::string out;
  ASSERT_EQ(Sh(Bin() + " capacity --model " + Hf("gpt-oss-120b") + " --gpus 1 --json", &out), 0)
      << out;
  const auto j = nlohmann::json::parse(out);
  EXPECT_GT(j.dump().find("kv"), 0u);
  ASSERT_EQ(Sh(Bin() + " capacity --model " + Hf("qwen3-8b") + "/config.json --gpus 1", &out), 0)
      << out;
}

TEST(ImportModelCli, RefusalIsOneLineWithExitCode2) {
  std::string out;
  const std::string dir = TestTempPath("mamba2");
  ASSERT_EQ(Sh("mkdir -p " + dir, &out), 0);
  std::ofstream(dir + "/config.json") << R"({"model_type": "mamba2", "num_hidden_layers": 64})";
  EXPECT_EQ(Sh(Bin() + " import-model " + dir, &out), 2) << out;
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
  EXPECT_NE(out.find("config.json"), std::string::npos) << out;
  EXPECT_NE(out.find("unknown architecture 'mamba2'"), std::string::npos) << out;
  EXPECT_EQ(Sh(Bin() + " import-model " + TestTempPath("nowhere"), &out), 2) << out;
  EXPECT_NE(out.find("nowhere: no such model folder"), std::string::npos) << out;
}

}  // namespace
