// Launch flags that choose kernels (deployment.attention_backend,
// moe_runner_backend): one of the engine version's backends
// (models/engines/<engine>.json launch_backends), whose kernels go over the
// version's own; absent, the version's own kernels; a name the version lacks
// is a one-line error that lists the ones it has.
#include <gtest/gtest.h>

#include <string>

#include "common/json_util.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "sim/step_explain.h"

namespace capplan::sim {
namespace {

nlohmann::json DeepSeek(const std::string& version, const std::string& hardware = "h200-sxm") {
  return nlohmann::json::parse(R"({
    "name": "t", "model": "deepseek-v3", "hardware": ")" +
                               hardware + R"(",
    "deployment": {"gpus": 8, "tp": 8, "engine": "sglang", "engine_version": ")" +
                               version + R"("},
    "workload": {"kind": "closed_loop", "concurrency": 8, "num_requests": 16,
                 "input_tokens": {"dist": "fixed", "value": 1024},
                 "output_tokens": {"dist": "fixed", "value": 64}, "seed": 1}})");
}

Result<std::string> Explain(const nlohmann::json& doc) {
  CAPPLAN_ASSIGN_OR_RETURN(auto sc, ParseScenario(doc, "t.json"));
  ExplainOptions e;
  e.decode_batch = 8;
  e.decode_context = 1024;
  e.prefill_tokens = 1024;
  return ExplainSteps(*sc, e);
}

bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// SGLang DeepSeek-V3 on H200 with --attention-backend flashinfer: its MLA
// decode and prefill ops are priced as FlashInfer's (the table assumed from
// FA3's says so), and --explain-step names the backend; absent, FA3's.
TEST(LaunchBackend, SglangFlashinferPricesMlaOpsWithFlashinfersKernels) {
  for (const std::string version : {"0.5.4", "0.5.7", "0.4.5"}) {
    nlohmann::json doc = DeepSeek(version);
    auto plain = Explain(doc);
    ASSERT_TRUE(plain.ok()) << plain.status().message();
    EXPECT_TRUE(Has(*plain, "sglang_fa3_mla_decode_bf16kv")) << version;
    EXPECT_FALSE(Has(*plain, "flashinfer")) << version;
    EXPECT_FALSE(Has(*plain, "Launch backend")) << version;
    doc["deployment"]["attention_backend"] = "flashinfer";
    auto fi = Explain(doc);
    ASSERT_TRUE(fi.ok()) << fi.status().message();
    EXPECT_TRUE(Has(*fi, "sglang_flashinfer_mla_decode_bf16kv")) << version << "\n" << *fi;
    EXPECT_TRUE(Has(*fi, "sglang_flashinfer_mla_prefill")) << version;
    EXPECT_FALSE(Has(*fi, "sglang_fa3_mla_decode_bf16kv (kernel)")) << version;
    EXPECT_TRUE(Has(*fi, "Launch backend: attention_backend flashinfer")) << version;
  }
}

// The backend's kernels hold on Blackwell too, over the architecture's own
// choices; a backend whose kernels are another architecture's code is an
// error when the run is prepared, naming the field.
TEST(LaunchBackend, ArchitectureChoicesAndLimits) {
  nlohmann::json doc = DeepSeek("0.5.4", "b200-sxm");
  auto plain = Explain(doc);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_TRUE(Has(*plain, "sglang_trtllm_mla_decode_bf16kv"));
  doc["deployment"]["attention_backend"] = "flashinfer";
  auto fi = Explain(doc);
  ASSERT_TRUE(fi.ok()) << fi.status().message();
  EXPECT_TRUE(Has(*fi, "sglang_flashinfer_mla_decode_bf16kv"));
  EXPECT_FALSE(Has(*fi, "sglang_trtllm_mla_decode_bf16kv"));
  doc["deployment"]["attention_backend"] = "fa3";
  auto fa3 = Explain(doc);
  ASSERT_FALSE(fa3.ok());
  EXPECT_TRUE(Has(fa3.status().message(), "/deployment/attention_backend"))
      << fa3.status().message();
  EXPECT_TRUE(Has(fa3.status().message(), "runs on sm90 only")) << fa3.status().message();
  EXPECT_FALSE(Has(fa3.status().message(), "\n"));
}

// An unknown backend, and one the version lacks, are one-line errors naming
// the file, the field and the backends the version has.
TEST(LaunchBackend, UnknownOrMissingBackendIsAOneLineError) {
  nlohmann::json doc = DeepSeek("0.5.4");
  doc["deployment"]["attention_backend"] = "foo";
  auto bad = ParseScenario(doc, "t.json");
  ASSERT_FALSE(bad.ok());
  const std::string m = bad.status().message();
  EXPECT_TRUE(Has(m, "t.json")) << m;
  EXPECT_TRUE(Has(m, "/deployment/attention_backend")) << m;
  EXPECT_TRUE(Has(m, "sglang 0.5.4 has no attention backend 'foo': one of ")) << m;
  EXPECT_TRUE(Has(m, "flashinfer")) << m;
  EXPECT_FALSE(Has(m, "\n")) << m;
  // trtllm_mla came with the 0.5 series: 0.4.5 lacks it.
  doc = DeepSeek("0.4.5");
  doc["deployment"]["attention_backend"] = "trtllm_mla";
  auto old = ParseScenario(doc, "t.json");
  ASSERT_FALSE(old.ok());
  EXPECT_TRUE(Has(old.status().message(), "sglang 0.4.5 has no attention backend 'trtllm_mla'"))
      << old.status().message();
  // 0.4.0 offers no backend capplan can price, and --moe-runner-backend is
  // a 0.5 flag.
  doc = DeepSeek("0.4.0");
  doc["deployment"]["attention_backend"] = "flashinfer";
  auto none = ParseScenario(doc, "t.json");
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(Has(none.status().message(), "sglang 0.4.0 offers no attention backend choice"))
      << none.status().message();
  doc = DeepSeek("0.4.6");
  doc["deployment"]["moe_runner_backend"] = "triton";
  auto moe = ParseScenario(doc, "t.json");
  ASSERT_FALSE(moe.ok());
  EXPECT_TRUE(Has(moe.status().message(), "/deployment/moe_runner_backend"))
      << moe.status().message();
  // Not a string.
  doc = DeepSeek("0.5.4");
  doc["deployment"]["attention_backend"] = 3;
  EXPECT_FALSE(ParseScenario(doc, "t.json").ok());
}

// The MoE runner backend chooses the expert kernel of FP8 checkpoints; the
// deployment's own `kernels` still go over a backend's.
TEST(LaunchBackend, MoeRunnerBackendAndKernelsOverIt) {
  nlohmann::json doc = DeepSeek("0.5.4");
  doc["deployment"]["moe_runner_backend"] = "flashinfer_cutlass";
  auto fc = Explain(doc);
  ASSERT_TRUE(fc.ok()) << fc.status().message();
  EXPECT_TRUE(Has(*fc, "sglang_flashinfer_cutlass_moe")) << *fc;
  EXPECT_FALSE(Has(*fc, "sglang_triton_fused_moe"));
  doc["deployment"]["attention_backend"] = "flashinfer";
  doc["deployment"]["kernels"] = {{"mla_decode.bf16", "sglang_fa3_mla_decode_bf16kv"}};
  auto both = Explain(doc);
  ASSERT_TRUE(both.ok()) << both.status().message();
  EXPECT_TRUE(Has(*both, "sglang_fa3_mla_decode_bf16kv"));
  EXPECT_TRUE(Has(*both, "sglang_flashinfer_mla_prefill"));
}

// vLLM: the attention backend by its AttentionBackendEnum name.
TEST(LaunchBackend, VllmAttentionBackend) {
  nlohmann::json doc = DeepSeek("0.19.0");
  doc["deployment"]["engine"] = "vllm";
  doc["deployment"]["attention_backend"] = "TRITON_MLA";
  auto t = Explain(doc);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE(Has(*t, "vllm_triton_mla_decode_bf16kv"));
  doc["deployment"]["attention_backend"] = "FLASHINFER_MLA";
  auto fi = Explain(doc);
  ASSERT_FALSE(fi.ok());
  EXPECT_TRUE(Has(fi.status().message(), "runs on sm100, sm103 only")) << fi.status().message();
  doc["deployment"]["attention_backend"] = "flashinfer";
  auto lower = ParseScenario(doc, "t.json");
  ASSERT_FALSE(lower.ok());
  EXPECT_TRUE(Has(lower.status().message(),
                  "vllm 0.19.0 has no attention backend 'flashinfer': "
                  "one of CUTLASS_MLA, FLASHINFER, "))
      << lower.status().message();
}

}  // namespace
}  // namespace capplan::sim
