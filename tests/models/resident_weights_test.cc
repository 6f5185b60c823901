// Weights as resident, not as shipped: per kernel implementation the engine
// version runs (models/engines/vllm.json "kernels" per architecture), the
// bytes its weight loading keeps on the GPU ("resident_weights": padding to
// the kernel's multiples, scales of the padded shape, re-typed biases).
// Every expected figure is computed by hand from the rule: sizes x padding.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "hw/profile.h"
#include "models/card.h"
#include "models/memory.h"
#include "tests/models/layouts.h"

namespace capplan::models {
namespace {

using test_layouts::Tp;

std::string Hf(const std::string& model) { return std::string(HF_TEST_DATA) + "/" + model; }

EngineMemoryOptions Vllm(const std::string& version) {
  EngineMemoryOptions o;
  o.engine = "vllm";
  o.version = version;
  return o;
}

// A plan on the named GPU, its profile passed so the architecture's kernels apply.
Result<MemoryPlan> PlanOn(const ModelCard& card, const std::string& gpu, int tp,
                          const std::string& weights, const EngineMemoryOptions& engine) {
  static std::map<std::string, hw::HardwareProfile>* profiles =
      new std::map<std::string, hw::HardwareProfile>;
  if (profiles->count(gpu) == 0) {
    CAPPLAN_ASSIGN_OR_RETURN((*profiles)[gpu], hw::LoadHardwareProfile(gpu));
  }
  const hw::HardwareProfile& p = profiles->at(gpu);
  const DeviceMemory device{p.gpu_memory_bytes, p.gpu_runtime_memory_bytes, &p};
  PrecisionChoice choice;
  choice.weights = weights;
  return PlanMemoryAllowShortfall(card, Tp(tp), choice, engine, device, 8192);
}

const ResidentComponent* Find(const MemoryPlan& p, Component c) {
  for (const ResidentComponent& r : p.resident_weights) {
    if (r.component == c) return &r;
  }
  return nullptr;
}

const ComponentWeights* Shipped(const MemoryPlan& p, Component c) {
  for (const ComponentWeights& w : p.weights.components) {
    if (w.component == c) return &w;
  }
  return nullptr;
}

int64_t SumOfTerms(const MemoryPlan& p) {
  int64_t s = 0;
  for (const MemoryTerm& t : p.terms) s += t.bytes;
  return s;
}

// gpt-oss-120b: 36 layers x 128 experts = 4,608 expert instances per GPU at
// TP 1; hidden 2,880, expert intermediate 2,880; MXFP4 (one E8M0 byte per 32
// along K), expert biases BF16 in the checkpoint.
constexpr int64_t kGptOssExperts = 36 * 128;

TEST(ResidentWeights, Mxfp4OnHopperRunsTritonKernelsWithFp32Biases) {
  auto c = LoadModelCard(Hf("gpt-oss-120b"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  auto p = PlanOn(*c, "h100-sxm", 1, "default", Vllm("0.19.0"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  const ResidentComponent* e = Find(*p, Component::kExperts);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->implementation, "vllm_triton_kernels_moe_mxfp4");
  EXPECT_EQ(e->rule_key, "vllm_triton_kernels_moe_mxfp4.mxfp4");
  // Shipped per expert instance: gate_up 2 x (2,880 x 2,880 / 2 + 2,880 x 90)
  // + bias 2 x 2,880 x 2 = 8,824,320; down 2,880 x 2,880 / 2 + 2,880 x 90 +
  // 2,880 x 2 = 4,412,160; 13,236,480 in all.
  EXPECT_EQ(e->shipped_bytes, 13236480 * kGptOssExperts);
  const ComponentWeights* w = Shipped(*p, Component::kExperts);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(e->shipped_bytes, w->bytes_per_gpu + w->scale_bytes_per_gpu);
  // Intermediate to x64: 2,880 = 45 x 64, no padding; hidden unpadded. The
  // biases become FP32: (2 x 2,880 + 2,880) x (4 - 2) B = 17,280 B per
  // instance; x 4,608 = 79,626,240.
  EXPECT_EQ(e->resident_bytes - e->shipped_bytes, 79626240);
  EXPECT_EQ(p->Term("kernel_layout_bytes"), 79626240);
  EXPECT_EQ(p->Term("weights_bytes"), p->weights.bytes_per_gpu);  // shipped stays shipped
  EXPECT_EQ(SumOfTerms(*p), p->gpu_memory_bytes);
}

TEST(ResidentWeights, Mxfp4OnBlackwellPadsHiddenAndIntermediateTo256) {
  auto c = LoadModelCard(Hf("gpt-oss-120b"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  auto p = PlanOn(*c, "b200-sxm", 1, "default", Vllm("0.19.0"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  const ResidentComponent* e = Find(*p, Component::kExperts);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->implementation, "vllm_trtllm_gen_moe_mxfp4_bf16");
  EXPECT_EQ(e->shipped_bytes, 13236480 * kGptOssExperts);
  // Hidden and intermediate 2,880 -> 3,072 (x256). Resident per instance:
  //   gate_up 2 x (3,072 x 3,072 / 2) = 9,437,184 + scales 2 x 3,072 x 96
  //   = 589,824 + FP32 bias 2 x 3,072 x 4 = 24,576;
  //   down 3,072 x 3,072 / 2 = 4,718,592 + scales 3,072 x 96 = 294,912
  //   + FP32 bias 3,072 x 4 = 12,288;
  //   = 15,077,376, vs 13,236,480 shipped: +1,840,896 per instance;
  //   x 4,608 = 8,482,848,768 B (7.90 GiB) more than shipped.
  EXPECT_EQ(e->resident_bytes, 15077376 * kGptOssExperts);
  EXPECT_EQ(p->Term("kernel_layout_bytes"), 8482848768);
  EXPECT_EQ(SumOfTerms(*p), p->gpu_memory_bytes);
  // The same model on SM90 keeps 8.41 GB less: KV capacity follows resident.
  auto h = PlanOn(*c, "h100-sxm", 1, "default", Vllm("0.19.0"));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(p->weights_resident_bytes - h->weights_resident_bytes, 8482848768 - 79626240);
}

TEST(ResidentWeights, Nvfp4OnHopperRunsMarlinPaddedToItsTile) {
  auto c = LoadModelCard(Hf("gpt-oss-120b"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  // gpt-oss re-quantized to NVFP4 over TP 4 on H100s: Marlin MoE (no FP4
  // tensor cores on SM90). Intermediate per rank 2,880 / 4 = 720.
  auto p = PlanOn(*c, "h100-sxm", 4, "nvfp4", Vllm("0.19.0"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  const ResidentComponent* e = Find(*p, Component::kExperts);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->rule_key, "vllm_marlin_moe.nvfp4");
  // w13's 2 x 720 = 1,440 rows to x64 -> 1,472 (intermediate 720 -> 736);
  // w2's 2,880 rows are a multiple of 64; its K 720 -> 736. Per instance:
  //   gate_up 2 x [(736 - 720) x 2,880 / 2 values + 16 x 180 E4M3 scales]
  //     = 2 x (23,040 + 2,880) = 51,840
  //   down 2,880 x (736 - 720) / 2 = 23,040 + 2,880 x (46 - 45) = 2,880
  //     = 25,920
  //   gate_up biases (BF16, padded with the rows) 2 x 16 x 2 = 64
  //   = 77,824 per instance; x 4,608 = 358,612,992.
  EXPECT_EQ(e->resident_bytes - e->shipped_bytes, 358612992);
  EXPECT_EQ(p->Term("kernel_layout_bytes"), 358612992);
}

TEST(ResidentWeights, Int4OnHopperMarlinKeepsShippedBytes) {
  auto c = LoadModelCard("qwen3-30b-a3b");
  ASSERT_TRUE(c.ok()) << c.status().message();
  auto p = PlanOn(*c, "h100-sxm", 1, "int4", Vllm("0.19.0"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  const ResidentComponent* e = Find(*p, Component::kExperts);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->rule_key, "vllm_marlin_moe.int4");
  // 48 layers x 128 experts; hidden 2,048, intermediate 768, INT4 g128
  // with BF16 scales: gate_up 2 x (768 x 2,048 / 2 + 768 x 16 x 2) = 2 x
  // 811,008; down 2,048 x 768 / 2 + 2,048 x 6 x 2 = 811,008; 2,433,024 per
  // instance x 6,144 = 14,948,499,456. Marlin re-tiles, pads nothing.
  EXPECT_EQ(e->shipped_bytes, int64_t{2433024} * 6144);
  EXPECT_EQ(e->resident_bytes, e->shipped_bytes);
  EXPECT_EQ(p->Term("kernel_layout_bytes"), 0);
}

TEST(ResidentWeights, Fp8BlockWeightsKeepTheirBlockScales) {
  auto c = LoadModelCard("deepseek-v3");
  ASSERT_TRUE(c.ok()) << c.status().message();
  auto p = PlanOn(*c, "h200-sxm", 8, "default", Vllm("0.19.0"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  const ResidentComponent* e = Find(*p, Component::kExperts);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->rule_key, "vllm_triton_fused_moe.fp8");
  // 58 MoE layers x 256 experts = 14,848 instances; intermediate per rank
  // 2,048 / 8 = 256, hidden 7,168; FP8 values 1 B, FP32 scales per 128x128:
  //   gate_up 2 x (256 x 7,168 + 2 x 56 x 4) = 2 x 1,835,456
  //   down 7,168 x 256 + 56 x 2 x 4 = 1,835,456
  //   = 5,506,368 per instance x 14,848 = 81,758,552,064.
  EXPECT_EQ(e->shipped_bytes, int64_t{5506368} * 14848);
  EXPECT_EQ(e->resident_bytes, e->shipped_bytes);
  const ResidentComponent* a = Find(*p, Component::kAttention);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->rule_key, "vllm_cutlass_fp8_per_tensor_gemm.fp8");
  EXPECT_EQ(a->resident_bytes, a->shipped_bytes);
  EXPECT_EQ(p->Term("kernel_layout_bytes"), 0);
}

// Without the GPU's profile only the kernels every architecture shares
// apply, and an engine without rules keeps the checkpoint's bytes.
TEST(ResidentWeights, NoRuleKeepsShippedBytes) {
  auto c = LoadModelCard(Hf("gpt-oss-120b"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  const DeviceMemory bare{143771LL << 20, 0};
  auto p = PlanMemory(*c, Tp(1), PrecisionChoice{}, Vllm("0.19.0"), bare, 8192);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(Find(*p, Component::kExperts), nullptr);
  EXPECT_EQ(p->Term("kernel_layout_bytes"), 0);
  // SGLang 0.4.6 predates gpt-oss: no kernel named for MXFP4, no rule.
  EngineMemoryOptions sglang;
  sglang.version = "0.4.6";
  auto s = PlanOn(*c, "h200-sxm", 1, "default", sglang);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->resident_weights.empty());
}

// SGLang 0.5.4 picks its MXFP4 MoE runner per architecture (server_args.py):
// triton_kernels on Hopper (intermediate to x64, FP32 biases), FlashInfer's
// MXFP4 MoE on Blackwell (hidden and intermediate to x256, FP32 biases): the
// same bytes as vLLM's two paths above.
TEST(ResidentWeights, SglangMxfp4OnHopperAndBlackwell) {
  auto c = LoadModelCard(Hf("gpt-oss-120b"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EngineMemoryOptions sglang;
  sglang.version = "0.5.4";
  auto h = PlanOn(*c, "h200-sxm", 1, "default", sglang);
  ASSERT_TRUE(h.ok()) << h.status().message();
  const ResidentComponent* e = Find(*h, Component::kExperts);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->implementation, "sglang_triton_kernels_moe_mxfp4");
  // (2 x 2,880 + 2,880) bias elements x 2 B more x 4,608 instances.
  EXPECT_EQ(h->Term("kernel_layout_bytes"), 79626240);
  EXPECT_EQ(SumOfTerms(*h), h->gpu_memory_bytes);
  auto b = PlanOn(*c, "b200-sxm", 1, "default", sglang);
  ASSERT_TRUE(b.ok()) << b.status().message();
  const ResidentComponent* f = Find(*b, Component::kExperts);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->implementation, "sglang_flashinfer_mxfp4_moe");
  // 15,077,376 - 13,236,480 = 1,840,896 B per instance x 4,608.
  EXPECT_EQ(f->resident_bytes - f->shipped_bytes, 8482848768);
  EXPECT_EQ(b->Term("kernel_layout_bytes"), 8482848768);
  EXPECT_EQ(SumOfTerms(*b), b->gpu_memory_bytes);
}

}  // namespace
}  // namespace capplan::models
