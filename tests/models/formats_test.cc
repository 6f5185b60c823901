// The format table (hw/formats.json): its rows, the rate each format's math
// runs at per architecture, the FP4 checkpoints the cards describe (which
// tensors are FP4, their bytes by hand arithmetic), FP4 KV bytes per token,
// and the refusal of FP4 weights on Hopper.
#include <gtest/gtest.h>

#include <cmath>

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "hw/formats.h"
#include "hw/op_pricing.h"
#include "hw/profile.h"
#include "models/card.h"
#include "models/kernel_choice.h"
#include "models/memory.h"
#include "tests/models/layouts.h"
#include "tests/models/shipped_cards.h"

namespace capplan::models {
namespace {

using test_cards::CardWeights;
using test_layouts::Tp;

const hw::NumberFormat& Row(const char* name) {
  return hw::Formats().Row(hw::ParseFormat(name).value());
}

TEST(Formats, NamedRowsKeepTheirIdsAndFp4RowsTheirScales) {
  auto t = hw::GetFormatTable();
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(std::string(hw::FormatName(hw::FormatId::kBf16)), "bf16");
  EXPECT_EQ(std::string(hw::FormatName(hw::FormatId::kFp8E4m3)), "fp8");
  EXPECT_EQ(std::string(hw::FormatName(hw::FormatId::kInt4)), "int4");
  EXPECT_EQ(*hw::ParseFormat("fp8_e4m3"), hw::FormatId::kFp8E4m3);
  const hw::NumberFormat& nv = Row("nvfp4");
  EXPECT_EQ(nv.bits, 4);
  EXPECT_EQ(nv.element, "e2m1");
  EXPECT_EQ(nv.scale.group_size, 16);
  EXPECT_EQ(hw::Formats().Row(nv.scale.format).name, "fp8");  // E4M3 scales
  EXPECT_EQ(nv.scale.fp32_tensor_scales, 2);
  const hw::NumberFormat& mx = Row("mxfp4");
  EXPECT_EQ(mx.scale.group_size, 32);
  EXPECT_EQ(hw::Formats().Row(mx.scale.format).bits, 8);  // E8M0
  EXPECT_EQ(Row("int4_g32").family, hw::FormatId::kInt4);
  EXPECT_EQ(Row("int4_g32").gemm_class, "gemm_int4");  // inherited from int4
  // Selectors exist for the new formats without a code change.
  EXPECT_TRUE(CheckKernelSelector("moe.nvfp4").ok());
  EXPECT_TRUE(CheckKernelSelector("dense_gemm.mxfp4").ok());
  EXPECT_FALSE(CheckKernelSelector("moe.fp4").ok());
  // The classes are the rows' classes: the same eight as the profiles hold.
  EXPECT_EQ(hw::EfficiencyClasses().size(), 8u);
}

TEST(Formats, BadTablesAreOneLineErrorsNamingTheField) {
  auto bad = hw::ParseFormatTable(R"({"formats": {"bf16": {}}})", "t.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fp16"), std::string::npos) << bad.status().message();
}

hw::HardwareProfile Profile(const std::string& arch) {
  hw::HardwareProfile p;
  p.name = "test-" + arch;
  p.architecture = arch;
  p.has_cost_model = true;
  p.bf16_flops_per_s = 1e15;
  p.fp8_flops_per_s = 2e15;
  p.fp4_flops_per_s = arch == "sm90" ? 0 : 4e15;
  p.fp32_flops_per_s = 5e13;
  p.int4_dequant_compute_overhead = 0.25;
  return p;
}

TEST(Formats, RatesPerArchitecture) {
  const hw::HardwareProfile hopper = Profile("sm90"), blackwell = Profile("sm100");
  const hw::FormatId nvfp4 = *hw::ParseFormat("nvfp4");
  hw::OpPricingInput op;
  op.family = hw::OpFamily::kDenseGemm;
  op.weights = nvfp4;
  op.compute = nvfp4;
  EXPECT_DOUBLE_EQ(hw::PriceOp(op, blackwell).peak_flops_per_s, 4e15);
  op.weights = hw::FormatId::kInt4;
  op.compute = hw::FormatId::kBf16;
  EXPECT_DOUBLE_EQ(hw::PriceOp(op, hopper).peak_flops_per_s, 1e15 / 1.25);
  EXPECT_EQ(hw::PriceOp(op, hopper).efficiency_class, "gemm_int4");
  op.weights = op.compute = hw::FormatId::kFp8E4m3;
  EXPECT_EQ(hw::PriceOp(op, hopper).efficiency_class, "gemm_fp8");
  op.compute = hw::FormatId::kBf16;  // FP8 weights under 16-bit math
  EXPECT_EQ(hw::PriceOp(op, hopper).efficiency_class, "gemm_bf16");

  EXPECT_TRUE(hw::CheckFormatRuns(nvfp4, blackwell).ok());
  const hw::FormatId mxfp8 = *hw::ParseFormat("mxfp8");
  Status s = hw::CheckFormatRuns(mxfp8, hopper);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "mxfp8 runs on sm100, sm103, sm120 tensor cores; test-sm90 is sm90 "
                         "(pick another format or a profile of those architectures)");
  hw::HardwareProfile no_fp4 = blackwell;
  no_fp4.fp4_flops_per_s = 0;
  s = hw::CheckFormatRuns(nvfp4, no_fp4);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("compute.fp4_flops_per_s"), std::string::npos) << s.message();
  EXPECT_TRUE(hw::CheckFormatRuns(*hw::ParseFormat("mxfp4"), hopper).ok());  // W4A16 there
}

// Hopper has no FP4 tensor cores, yet engines serve NVFP4 checkpoints there
// weight-only (Marlin): the row's sm90 variant prices it as W4A16 on BF16
// tensor cores with the INT4 classes, while Blackwell keeps the FP4 rate.
TEST(Formats, Nvfp4RunsDequantizedWhereNoFp4TensorCores) {
  const hw::HardwareProfile hopper = Profile("sm90"), blackwell = Profile("sm100");
  const hw::FormatId nvfp4 = *hw::ParseFormat("nvfp4");
  EXPECT_TRUE(hw::CheckFormatRuns(nvfp4, hopper).ok());
  const hw::FormatTable& t = hw::Formats();
  const int sm90 = hw::ArchitectureIndex("sm90"), sm100 = hw::ArchitectureIndex("sm100");
  EXPECT_TRUE(t.RowOn(nvfp4, sm90).dequantize);
  EXPECT_EQ(t.RowOn(nvfp4, sm90).activations, hw::FormatId::kBf16);
  EXPECT_FALSE(t.RowOn(nvfp4, sm100).dequantize);
  EXPECT_EQ(&t.RowOn(nvfp4, sm100), &t.Row(nvfp4));
  EXPECT_EQ(&t.RowOn(nvfp4, -1), &t.Row(nvfp4));
  hw::OpPricingInput op;
  op.family = hw::OpFamily::kGroupedGemm;
  op.weights = op.compute = nvfp4;
  const hw::OpPricing h = hw::PriceOp(op, hopper);
  EXPECT_DOUBLE_EQ(h.peak_flops_per_s, 1e15 / 1.25);  // BF16 rate less the dequant overhead
  EXPECT_EQ(h.efficiency_class, "grouped_gemm_int4");
  EXPECT_DOUBLE_EQ(hw::PriceOp(op, blackwell).peak_flops_per_s, 4e15);
  EXPECT_EQ(hw::PriceOp(op, blackwell).efficiency_class, "grouped_gemm");
}

TEST(Formats, DequantizedOnNeedsAMathRateThere) {
  std::string text = ReadFile(DataPath("hw/formats.json")).value();
  const std::string from = R"("sm80": "bf16", "sm89": "bf16", "sm90": "bf16", "sm100": "fp4")";
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, from.size(), R"("sm100": "fp4")");
  auto bad = hw::ParseFormatTable(text, "f.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("dequantized_on"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("sm80 has no `math` rate"), std::string::npos)
      << bad.status().message();
}

// NVFP4 bytes of an n x k weight: two E2M1 per byte, one E4M3 per 16, two
// FP32 per tensor (weight_scale_2, input_scale).
double Nvfp4Bytes(double n, double k) { return n * k / 2 + n * k / 16 + 8; }

TEST(Fp4Checkpoints, KimiNvfp4IsNvfp4ExpertsOverBf16) {
  auto w = CardWeights("kimi-k2.6", Tp(1), "nvfp4");
  ASSERT_TRUE(w.ok()) << w.status().message();
  auto bf16 = CardWeights("kimi-k2.6", Tp(1), "bf16");
  ASSERT_TRUE(bf16.ok());
  // 60 MoE layers x 384 experts x gate, up (2048 x 7168) and down (7168 x 2048).
  const double experts = 60.0 * 384 * 3;
  const double want = experts * Nvfp4Bytes(2048, 7168);
  for (size_t i = 0; i < w->components.size(); ++i) {
    const ComponentWeights& cw = w->components[i];
    if (cw.component == Component::kExperts) {
      EXPECT_EQ(DtypeName(cw.format.dtype), std::string("nvfp4"));
      EXPECT_EQ(cw.bytes_per_gpu + cw.scale_bytes_per_gpu, static_cast<int64_t>(want));
    } else {
      // Everything else as the BF16 release holds it.
      EXPECT_EQ(cw.bytes_per_gpu, bf16->components[i].bytes_per_gpu)
          << ComponentName(cw.component);
    }
  }
}

TEST(Fp4Checkpoints, Glm52Nvfp4IsExpertsOnly) {
  auto w = CardWeights("glm-5.2", Tp(1), "nvfp4");
  ASSERT_TRUE(w.ok()) << w.status().message();
  // 75 MoE layers x 256 experts x gate, up (2048 x 6144) and down; the rest BF16.
  for (const ComponentWeights& cw : w->components) {
    if (cw.component == Component::kExperts) {
      EXPECT_EQ(cw.bytes_per_gpu + cw.scale_bytes_per_gpu,
                static_cast<int64_t>(75.0 * 256 * 3 * Nvfp4Bytes(2048, 6144)));
    } else {
      EXPECT_EQ(DtypeName(cw.format.dtype), std::string("bf16")) << ComponentName(cw.component);
    }
  }
}

TEST(Fp4Checkpoints, Llama33Nvfp4QuantizesEveryBlockLinear) {
  auto w = CardWeights("llama-3.3-70b", Tp(1), "nvfp4");
  ASSERT_TRUE(w.ok()) << w.status().message();
  // 80 layers: q (8192x8192), k and v (1024x8192), o (8192x8192), gate and
  // up (28672x8192), down (8192x28672); embeddings and LM head BF16.
  double want = 0;
  for (const auto& [n, k] : std::vector<std::pair<double, double>>{
           {8192, 8192}, {1024, 8192}, {1024, 8192}, {8192, 8192},
           {28672, 8192}, {28672, 8192}, {8192, 28672}}) {
    want += 80 * Nvfp4Bytes(n, k);
  }
  double got = 0;
  for (const ComponentWeights& cw : w->components) {
    if (cw.component == Component::kAttention || cw.component == Component::kDenseFfn) {
      got += static_cast<double>(cw.bytes_per_gpu + cw.scale_bytes_per_gpu);
    }
  }
  EXPECT_EQ(static_cast<int64_t>(got), static_cast<int64_t>(want));
}

TEST(Fp4Kv, BytesPerTokenCarryOneScalePer16) {
  const hw::FormatId nvfp4 = *hw::ParseFormat("nvfp4");
  auto kimi = LoadModelCard("kimi-k2.6");
  ASSERT_TRUE(kimi.ok());
  auto kv = ComputeKvLayout(*kimi, Tp(8), nvfp4);
  ASSERT_TRUE(kv.ok()) << kv.status().message();
  // 61 layers x (576 latent+rope values / 2 + 576 / 16 one-byte scales).
  EXPECT_EQ(kv->bytes_per_token, 61 * (288 + 36));
  auto llama = LoadModelCard("llama-3.3-70b");
  ASSERT_TRUE(llama.ok());
  kv = ComputeKvLayout(*llama, Tp(8), nvfp4);
  ASSERT_TRUE(kv.ok());
  // 80 layers x 1 KV head per rank x K and V of 128 each.
  EXPECT_EQ(kv->bytes_per_token, 80 * (256 / 2 + 256 / 16));
  auto glm = LoadModelCard("glm-5.2");
  ASSERT_TRUE(glm.ok());
  EXPECT_FALSE(ComputeKvLayout(*glm, Tp(8), nvfp4).ok());  // no DSA FP4 layout
}

// vLLM's fp8_per_token_head: FP8 K and V plus one FP32 scale per token and
// KV head for each (vllm/v1/kv_cache_interface.py: 2 x block x heads x 4 B
// per page). SGLang has no such format and MLA caches no heads: both are
// one-line usage errors naming --kv.
TEST(Fp8PerTokenHeadKv, BytesPerTokenCarryTwoFp32ScalesPerHead) {
  const hw::FormatId kv = *hw::ParseFormat("fp8_per_token_head");
  auto llama = LoadModelCard("llama-3.1-8b");
  ASSERT_TRUE(llama.ok());
  auto layout = ComputeKvLayout(*llama, Tp(1), kv);
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  // 32 layers x 8 KV heads x (K and V of 128 FP8 values + 2 x 4 B).
  EXPECT_EQ(layout->bytes_per_token, 32 * 8 * (256 + 8));
  EXPECT_EQ(layout->scale_bytes_per_token, 32 * 8 * 8);
  auto kimi = LoadModelCard("kimi-k2.6");
  ASSERT_TRUE(kimi.ok());
  auto mla = ComputeKvLayout(*kimi, Tp(8), kv);
  ASSERT_FALSE(mla.ok());
  EXPECT_EQ(mla.status().message().rfind("--kv: fp8_per_token_head scales each KV head", 0), 0u)
      << mla.status().message();

  auto h200 = hw::LoadHardwareProfile("h200-sxm");
  ASSERT_TRUE(h200.ok()) << h200.status().message();
  DeviceMemory dev{h200->gpu_memory_bytes, h200->gpu_runtime_memory_bytes, &*h200};
  PrecisionChoice c;
  c.kv_cache = kv;
  EngineMemoryOptions vllm;
  vllm.engine = "vllm";
  auto plan = PlanMemory(*llama, Tp(1), c, vllm, dev, 8192);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->kv.bytes_per_token, 32 * 8 * (256 + 8));
  EngineMemoryOptions sglang;
  sglang.engine = "sglang";
  auto refused = PlanMemory(*llama, Tp(1), c, sglang, dev, 8192);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "--kv: fp8_per_token_head is a KV cache format of vllm only, not sglang; use fp8 "
            "(per-tensor scales)");
}

// The NVFP4 checkpoint plans on Hopper (run weight-only there) with the same
// stored bytes as on Blackwell; a Blackwell-only format is refused on Hopper.
TEST(Fp4Checkpoints, Nvfp4PlansOnHopperAndBlackwellMxfp8OnlyOnBlackwell) {
  auto card = LoadModelCard("kimi-k2.6");
  ASSERT_TRUE(card.ok());
  PrecisionChoice c;
  c.weights = "nvfp4";
  auto h200 = hw::LoadHardwareProfile("h200-sxm");
  ASSERT_TRUE(h200.ok()) << h200.status().message();
  DeviceMemory dev{h200->gpu_memory_bytes, h200->gpu_runtime_memory_bytes, &*h200};
  EngineMemoryOptions vllm;
  vllm.engine = "vllm";
  auto plan = PlanMemory(*card, Tp(8), c, vllm, dev, 8192);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const int64_t hopper_weights = plan->Term("weights_bytes");
  EXPECT_GT(hopper_weights, 0);
  PrecisionChoice mx;
  mx.weights = "mxfp8";
  auto refused = PlanMemory(*card, Tp(8), mx, EngineMemoryOptions{}, dev, 8192);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidConfig);
  EXPECT_NE(refused.status().message().find("mxfp8 runs on sm100"), std::string::npos)
      << refused.status().message();
  auto b200 = hw::LoadHardwareProfile("b200-sxm");
  if (!b200.ok()) GTEST_SKIP() << "no b200-sxm profile yet: " << b200.status().message();
  DeviceMemory bdev{b200->gpu_memory_bytes, b200->gpu_runtime_memory_bytes, &*b200};
  plan = PlanMemory(*card, Tp(8), c, vllm, bdev, 8192);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->Term("weights_bytes"), hopper_weights);
}

}  // namespace
}  // namespace capplan::models
