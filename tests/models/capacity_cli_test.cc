// `capplan capacity` as a user runs it: exit codes 0/1/2, one-line errors
// naming the flag or file + JSON path, nothing on stdout when it fails.
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util/temp_dir.h"

namespace {

struct CliRun {
  int code = -1;
  std::string out, err;
};

CliRun Capplan(const std::string& args) {
  const std::string err_file = capplan::test_util::TestTempPath("capacity_cli_err.txt");
  const std::string cmd = std::string(CAPPLAN_BIN) + " capacity " + args + " 2>" + err_file;
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (FILE* e = fopen(err_file.c_str(), "r")) {
    while ((n = fread(buf, 1, sizeof buf, e)) > 0) r.err.append(buf, n);
    fclose(e);
  }
  return r;
}

void ExpectOneLineError(const CliRun& r, int code, const std::string& needle) {
  EXPECT_EQ(r.code, code) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // exactly one line
}

TEST(CapacityCli, JsonHasTheDocumentedKeys) {
  CliRun r = Capplan("--model kimi-k2.6 --gpus 8 --tp 8 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"kv_capacity_tokens", "kv_bytes_per_token", "weights_bytes_per_gpu",
                        "kv_pool_bytes_per_gpu", "mem_fraction_static",
                        "max_concurrent_requests"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["kv_bytes_per_token"], 70272);
  EXPECT_DOUBLE_EQ(j["mem_fraction_static"].get<double>(), 0.897);
  CliRun v = Capplan("--model llama-3.1-8b --gpus 1 --engine vllm --kv fp8 --json");
  ASSERT_EQ(v.code, 0) << v.err;
  auto jv = nlohmann::json::parse(v.out);
  EXPECT_DOUBLE_EQ(jv["gpu_memory_utilization"].get<double>(), 0.9);
  EXPECT_EQ(jv["kv_bytes_per_token"], 65536);
}

// The KV pool's range beside its point value: JSON keys, the text line, and
// with --explain each ranged term with the pool at its two ends.
TEST(CapacityCli, KvRangeBesideThePointValue) {
  CliRun r = Capplan("--model deepseek-v3 --gpus 8 --tp 8 --json --explain");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const int64_t point = j["kv_capacity_tokens"];
  EXPECT_LT(j["kv_tokens_lo"].get<int64_t>(), point);
  EXPECT_GT(j["kv_tokens_hi"].get<int64_t>(), point);
  ASSERT_TRUE(j["kv_range_terms"].is_array());
  ASSERT_FALSE(j["kv_range_terms"].empty());
  for (const auto& t : j["kv_range_terms"]) {
    for (const char* k : {"term", "value", "range", "kv_tokens_at_range_lo",
                          "kv_tokens_at_range_hi", "source"}) {
      EXPECT_TRUE(t.contains(k)) << k;
    }
  }
  CliRun text = Capplan("--model deepseek-v3 --gpus 8 --tp 8");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("KV capacity range: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(--explain lists them)"), std::string::npos) << text.out;
  CliRun ex = Capplan("--model deepseek-v3 --gpus 8 --tp 8 --explain");
  ASSERT_EQ(ex.code, 0) << ex.err;
  EXPECT_NE(ex.out.find("startup_bytes 1.20 GiB, range 0.00 .. 2.40 GiB"), std::string::npos)
      << ex.out;
}

TEST(CapacityCli, TextReportAndTable) {
  CliRun r = Capplan("--model deepseek-v3 --gpus 8 --tp 8 --context-tokens 32768");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("KV capacity"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("experts"), std::string::npos);
  CliRun t = Capplan("--table --gpus 8 --tp 8");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("does not fit: needs"), std::string::npos) << t.out;  // GLM-5.2 BF16
  CliRun tj = Capplan("--table --gpus 8 --tp 8 --json");
  ASSERT_EQ(tj.code, 0) << tj.err;
  auto rows = nlohmann::json::parse(tj.out);
  ASSERT_TRUE(rows.is_array());
  EXPECT_GE(rows.size(), 14u);  // every card x {bf16, fp8}
  EXPECT_EQ(rows.size() % 2, 0u);
}

// SGLang 0.4.5.post3 serving DeepSeek-R1 on 8xH200 logged "KV Cache is
// allocated. #tokens: 654280" (llm-ie-benchmarks sgl-0.4.5.post3-deepseek-r1.log).
TEST(CapacityCli, ReproducesTheSglangDeepSeekR1Log) {
  CliRun r = Capplan(
      "--model deepseek-v3 --gpus 8 --tp 8 --engine sglang --engine-version 0.4.5.post3 "
      "--mem-fraction 0.9074083 --kv bf16 --page-size 1 --json --explain");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const double tokens = j["kv_capacity_tokens"].get<double>();
  EXPECT_NEAR(tokens / 654280.0, 1.0, 0.005) << tokens;
  const auto& terms = j["memory_bytes_per_gpu"];
  int64_t sum = 0;
  for (const auto& [k, v] : terms.items()) sum += v.get<int64_t>();
  EXPECT_EQ(sum, j["gpu_memory_bytes"].get<int64_t>());
  for (const char* k : {"startup_bytes", "communicator_bytes", "weights_bytes",
                        "fused_shared_expert_bytes", "mla_absorbed_bytes", "kv_pool_bytes",
                        "reserve_bytes"}) {
    EXPECT_TRUE(terms.contains(k)) << k;
    EXPECT_TRUE(j["memory_term_sources"].contains(k)) << k;
  }
  // "Load weight end ... mem usage=81.64 GB" (GiB) on every rank.
  EXPECT_NEAR(j["weights_resident_bytes_per_gpu"].get<double>() / (81.64 * (1 << 30)), 1.0,
              0.005);
  EXPECT_EQ(j["engine_rule_version"], "0.4.5");
  EXPECT_FALSE(j.contains("engine_version_note"));
  // A release without an entry of its own takes the one before it, and says so.
  CliRun text = Capplan("--model deepseek-v3 --gpus 8 --tp 8 --engine-version 0.4.4 --explain");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("      source: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("has no entry of its own"), std::string::npos) << text.out;
}

TEST(CapacityCli, HelpSaysWhatEachFormatQuantizes) {
  CliRun r = Capplan("--help");
  ASSERT_EQ(r.code, 0) << r.err;
  // Kimi's INT4 release quantizes the routed experts only.
  EXPECT_NE(r.out.find("kimi-k2.6:  fp8 = attention experts shared_experts dense_ffn;  int4 = "
                       "experts;"),
            std::string::npos)
      << r.out;
  CliRun k = Capplan("--model kimi-k2.6 --gpus 8 --weights int4");
  ASSERT_EQ(k.code, 0) << k.err;
  EXPECT_NE(k.out.find("weights int4 re-quantizes: experts (Kimi's own INT4 release"),
            std::string::npos)
      << k.out;
  // Published FP4 checkpoints are listed with the formats of their card.
  EXPECT_NE(r.out.find("kimi-k2.6:  fp8 = attention experts shared_experts dense_ffn;  int4 = "
                       "experts;  nvfp4 = experts;"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("llama-3.3-70b:  fp8 = attention dense_ffn;  int4 = attention dense_ffn;  "
                       "nvfp4 = attention dense_ffn;"),
            std::string::npos)
      << r.out;
}

TEST(CapacityCli, BlackwellOnlyFormatsAreRefusedOnHopper) {
  ExpectOneLineError(Capplan("--hardware h200-sxm --model kimi-k2.6 --gpus 8 --weights mxfp8"), 1,
                     "weights: attention: mxfp8 runs on sm100, sm103, sm120 tensor cores; "
                     "h200-sxm is sm90");
  // NVFP4 runs on Hopper weight-only (Marlin), so it plans there.
  CliRun h = Capplan("--hardware h200-sxm --model kimi-k2.6 --gpus 8 --weights nvfp4 --kv fp8");
  EXPECT_EQ(h.code, 0) << h.err;
  CliRun b = Capplan(
      "--hardware b200-sxm --model kimi-k2.6 --gpus 8 --weights nvfp4 --kv fp8 --engine vllm");
  if (b.err.find("unknown hardware profile 'b200-sxm'") != std::string::npos) {
    GTEST_SKIP() << "no b200-sxm profile yet: " << b.err;
  }
  EXPECT_EQ(b.code, 0) << b.err;
  EXPECT_NE(b.out.find("nvfp4"), std::string::npos) << b.out;
}

// vLLM 0.19.0 on one H100 80GB node, gpu_memory_utilization 0.95,
// max_model_len 8192 (llm-d-planner PR 205 logs), through the shipped
// h100-sxm profile: "GPU KV cache size" within 0.5% for every row.
TEST(CapacityCli, ReproducesTheVllmH100LogsOnTheH100Profile) {
  struct Row {
    const char* args;
    double logged;
  };
  const Row rows[] = {
      {"--model llama-3.1-8b --tp 1", 476016},
      {"--model llama-3.1-8b --tp 1 --kv fp8", 952032},
      {"--model llama-3.1-8b --tp 1 --weights fp8", 529248},
      {"--model llama-3.1-8b --tp 1 --weights int4", 554704},
      {"--model llama-3.1-8b --tp 2", 1044688},
      {"--model llama-3.1-8b --tp 4", 2209792},
      {"--model llama-3.3-70b --tp 2 --weights fp8", 244304},
      {"--model llama-3.3-70b --tp 4 --weights fp8", 708992},
      {"--model qwen3-8b --tp 1", 418688},
      {"--model qwen3-30b-a3b --tp 1", 168288},
      {"--model deepseek-v2-lite --tp 1", 1505552},
  };
  for (const Row& r : rows) {
    CliRun run = Capplan(std::string(r.args) +
                         " --hardware h100-sxm --engine vllm --engine-version 0.19.0 "
                         "--mem-fraction 0.95 --context-tokens 8192 --json");
    ASSERT_EQ(run.code, 0) << r.args << ": " << run.err;
    auto j = nlohmann::json::parse(run.out);
    const double tokens = j["kv_capacity_tokens"].get<double>();
    EXPECT_NEAR(tokens / r.logged, 1.0, 0.005) << r.args << ": " << tokens;
  }
}

TEST(CapacityCli, EngineFlagsAreChecked) {
  ExpectOneLineError(Capplan("--model kimi-k2.6 --gpus 8 --engine-version 0.3.1"), 2,
                     "known sglang versions: 0.4.0, 0.4.5, 0.4.6, 0.5.4");
  ExpectOneLineError(Capplan("--model kimi-k2.6 --gpus 8 --engine vllm --engine-version 0.19.x"),
                     2, "did you mean '0.19.0'");
  ExpectOneLineError(Capplan("--model kimi-k2.6 --gpus 8 --nvls maybe"), 2, "--nvls");
  ExpectOneLineError(Capplan("--model deepseek-v3 --gpus 8 --mem-fraction 0.5"), 1,
                     "GiB short per GPU");
}

// The H100 profile is accepted wherever a profile name is: its 81,559 MiB
// sizes the pool, so a Llama-3.1-8B vLLM pool is smaller than on H200.
TEST(CapacityCli, H100ProfileByName) {
  const std::string args = "--model llama-3.1-8b --gpus 1 --tp 1 --engine vllm";
  CliRun h100 = Capplan("--hardware h100-sxm " + args + " --json");
  ASSERT_EQ(h100.code, 0) << h100.err;
  auto j = nlohmann::json::parse(h100.out);
  EXPECT_EQ(j["hardware"], "h100-sxm");
  EXPECT_EQ(j["gpu_memory_bytes"].get<int64_t>(), 81559LL * 1024 * 1024);
  EXPECT_EQ(j["kv_bytes_per_token"], 131072);
  CliRun h200 = Capplan("--hardware h200-sxm " + args + " --json");
  ASSERT_EQ(h200.code, 0) << h200.err;
  auto j2 = nlohmann::json::parse(h200.out);
  EXPECT_GT(j["kv_capacity_tokens"].get<int64_t>(), 0);
  EXPECT_LT(j["kv_capacity_tokens"].get<int64_t>(), j2["kv_capacity_tokens"].get<int64_t>());
  EXPECT_EQ(j["weights_bytes_per_gpu"], j2["weights_bytes_per_gpu"]);
  CliRun text = Capplan("--hardware h100-sxm " + args);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("h100-sxm"), std::string::npos) << text.out;
  ExpectOneLineError(Capplan("--hardware h100-sx " + args), 2, "did you mean 'h100-sxm'");
}

// Usage errors exit 2, configurations that cannot run exit 1; either way one
// line that names the cause.
TEST(CapacityCli, BadCommandsAreOneLineErrorsWithTheirExitCode) {
  const std::string dir = MODELS_TEST_DATA;
  const struct {
    std::string args;
    int code;
    std::string says;
  } kCases[] = {
      {"--model kimi-k2.5 --gpus 8", 2, "did you mean 'kimi-k2.6'"},
      {"--model kimi-k2.6 --gpus 8 --tp=-8", 2, "--tp"},
      {"--model kimi-k2.6 --gpus 8 --mem-fraction 2", 2, "--mem-fraction"},
      {"--model kimi-k2.6 --gpus 8 --context-tokens=-1", 2, "--context-tokens"},
      {"--model kimi-k2.6 --gpus 8 --kv int8", 2, "--kv must be"},
      {"--model kimi-k2.6 --gpus 8 --weights fp6", 2, "--weights"},
      {"--model kimi-k2.6 --gpus 8 --engine sglng", 2, "did you mean"},
      {"--model kimi-k2.6 --gpus 8 --tpp 8", 2, "did you mean '--tp'"},
      {"--model kimi-k2.6 --gpus 99999999", 2, "--gpus"},
      {"--model " + dir + "/malformed.json --gpus 1", 2, "malformed.json: line 4"},
      {"--model " + dir + "/unknown_field.json --gpus 1", 2, "unknown_field.json: /num_layerz"},
      {"--model llama-3.1-70b --gpus 3 --tp 3", 1, "num_heads 64"},
      {"--model glm-5.2 --gpus 8 --tp 8", 1, "GiB short per GPU"},
      {"--model kimi-k2.6 --gpus 8 --tp 8 --ep 3", 1, "--ep 3"},
      {"--model llama-3.1-8b --gpus 1 --context-tokens 1000000", 1, "max_position_embeddings"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.args);
    ExpectOneLineError(Capplan(c.args), c.code, c.says);
  }
}

// EPLB redundant experts in the plan: DeepSeek-V3 at EP32 with 32 redundant
// experts (1 per rank) holds one more routed-expert slot per GPU,
// 2,554,954,752 B (worked in tests/models/expert_parallel_test.cc), and
// the KV pool shrinks by it; a count that does not split over the ranks is
// a usage error naming the flag.
TEST(CapacityCli, RedundantExpertsShowAsTheirOwnTerm) {
  const std::string base = "--model deepseek-v3 --gpus 32 --ep 32 --dp-attention --kv fp8 --json";
  CliRun plain = Capplan(base);
  CliRun eplb = Capplan(base + " --ep-redundant-experts 32");
  ASSERT_EQ(plain.code, 0) << plain.err;
  ASSERT_EQ(eplb.code, 0) << eplb.err;
  auto a = nlohmann::json::parse(plain.out);
  auto b = nlohmann::json::parse(eplb.out);
  EXPECT_FALSE(a["memory_bytes_per_gpu"].contains("eplb_redundant_expert_bytes"));
  EXPECT_EQ(b["memory_bytes_per_gpu"]["eplb_redundant_expert_bytes"], 2554954752);
  EXPECT_LT(b["kv_capacity_tokens"].get<int64_t>(), a["kv_capacity_tokens"].get<int64_t>());
  CliRun text = Capplan("--model deepseek-v3 --gpus 32 --ep 32 --dp-attention --kv fp8 "
                        "--ep-redundant-experts 32");
  EXPECT_NE(text.out.find("EPLB redundant experts"), std::string::npos) << text.out;
  ExpectOneLineError(Capplan(base + " --ep-redundant-experts 33"), 2, "--ep-redundant-experts");
}

// Kimi K2.6 decode at TP 96 with DP attention: sharded, its shared expert
// (intermediate 2048) does not split over 96 GPUs; under DeepEP every GPU
// holds it whole, so the layout plans and the terms add up to the device.
TEST(CapacityCli, DeepEpKeepsTheSharedExpertWhole) {
  const std::string base = "--model kimi-k2.6 --gpus 96 --ep 96 --dp-attention --kv fp8 "
                           "--mem-fraction 0.85 --cuda-graph-max-bs 128 --json";
  ExpectOneLineError(Capplan(base), 1, "does not divide the shared experts' intermediate size");
  CliRun deepep = Capplan(base + " --deepep");
  ASSERT_EQ(deepep.code, 0) << deepep.err;
  auto j = nlohmann::json::parse(deepep.out);
  int64_t sum = 0;
  for (const auto& [key, bytes] : j["memory_bytes_per_gpu"].items()) sum += bytes.get<int64_t>();
  EXPECT_EQ(sum, j["gpu_memory_bytes"].get<int64_t>());
  EXPECT_EQ(j["attention_ranks"], 96);
}

}  // namespace
