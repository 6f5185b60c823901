// vLLM's kernels on Blackwell: the engine profile names them per
// architecture, and the shipped SM100/SM103 profiles price each with a table
// of its own kernel (NVFP4 experts and GEMMs at the FP4 rate, not the FP8
// curves), or say which measured kernel stands in.
#include <gtest/gtest.h>

#include <string>

#include "hw/formats.h"
#include "hw/profile.h"
#include "models/engine_profile.h"
#include "models/ops.h"
#include "sim/cost_model.h"

namespace capplan::calibrate {
namespace {

// InferenceX ran vLLM 0.21, which resolves to the 0.19 entry.
const models::EngineProfile& Vllm021() {
  static const models::EngineProfile* p = [] {
    auto r = models::ResolveEngine("vllm", "0.21.0");
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r->profile : nullptr;
  }();
  return *p;
}

TEST(BlackwellFp4Kernels, VllmChoosesPerArchitecture) {
  const models::EngineProfile& e = Vllm021();
  for (const char* arch : {"sm100", "sm103"}) {
    const auto k = e.KernelNamesFor(arch);
    EXPECT_EQ(k.at("moe.nvfp4"), "vllm_trtllm_gen_moe_nvfp4") << arch;
    EXPECT_EQ(k.at("moe.fp8"), "vllm_trtllm_gen_moe") << arch;
    EXPECT_EQ(k.at("dense_gemm.nvfp4"), "vllm_flashinfer_nvfp4_gemm") << arch;
    EXPECT_EQ(k.at("mla_decode.bf16"), "vllm_flashinfer_mla_decode_bf16kv") << arch;
    EXPECT_EQ(k.at("mla_prefill.bf16"), "vllm_flashinfer_mla_prefill") << arch;
    // vLLM's default for W4A16 experts stays Marlin; the MxInt4 kernel is opt-in.
    EXPECT_EQ(k.at("moe.int4"), "vllm_marlin_moe") << arch;
  }
  const auto hopper = e.KernelNamesFor("sm90");
  // Hopper runs NVFP4 experts weight-only, through the Marlin MoE kernel.
  EXPECT_EQ(hopper.at("moe.nvfp4"), "vllm_marlin_moe");
  EXPECT_EQ(hopper.at("moe.fp8"), "vllm_triton_fused_moe");
  EXPECT_EQ(hopper.at("mla_decode.bf16"), "vllm_flashmla_decode_bf16kv");
  EXPECT_NE(e.SourceOf("kernels_by_architecture.sm100.moe.int4")
                .find("VLLM_USE_FLASHINFER_MOE_INT4"),
            std::string::npos);
}

// Every kernel vLLM runs on a GPU has a table in that GPU's profile.
TEST(BlackwellFp4Kernels, EveryChosenKernelHasATable) {
  for (const char* name : {"b200-sxm", "gb200-nvl72", "b300-sxm", "gb300-nvl72"}) {
    auto p = hw::LoadHardwareProfile(name);
    ASSERT_TRUE(p.ok()) << p.status().message();
    for (const auto& [sel, impl] : Vllm021().KernelNamesFor(p->architecture)) {
      EXPECT_EQ(p->kernels.count(impl), 1u) << name << ": " << sel << " -> " << impl;
    }
    EXPECT_EQ(p->kernels.count("vllm_trtllm_gen_moe_int4"), 1u) << name;
  }
}

// The 4-bit tables: fitted from records of their own kernel, except vLLM's
// MxInt4 MoE, which says whose records stand in.
TEST(BlackwellFp4Kernels, TablesAreFittedOrAssumedByName) {
  auto p = hw::LoadHardwareProfile("b200-sxm");
  ASSERT_TRUE(p.ok()) << p.status().message();
  for (const char* own :
       {"vllm_trtllm_gen_moe_nvfp4", "vllm_flashinfer_nvfp4_gemm", "sglang_trtllm_gen_moe_int4"}) {
    const hw::KernelTable& t = p->kernels.at(own);
    EXPECT_FALSE(t.assumed()) << own;
    EXPECT_GT(t.efficiency.memory.fit_points, 0) << own;
    EXPECT_EQ(t.efficiency.memory.provenance.kind, "fitted") << own;
  }
  EXPECT_EQ(p->kernels.at("vllm_trtllm_gen_moe_int4").assumed_from, "sglang_trtllm_gen_moe_int4");
  EXPECT_EQ(p->kernels.at("vllm_trtllm_gen_moe_int4").efficiency_class, "grouped_gemm_int4");
  EXPECT_EQ(p->kernels.at("vllm_flashinfer_mla_prefill").assumed_from, "trtllm_mla_prefill");
  EXPECT_EQ(p->kernels.at("vllm_trtllm_gen_moe_nvfp4").efficiency_class, "grouped_gemm");
}

models::Op Nvfp4Experts(double rows, double experts, double bytes, double flops) {
  auto nvfp4 = hw::ParseFormat("nvfp4");
  EXPECT_TRUE(nvfp4.ok());
  models::Op op;
  op.kind = models::OpKind::kGroupedGemm;
  op.op_class = models::OpClass::kMoe;
  op.name = "moe.experts";
  op.m = static_cast<int64_t>(rows);
  op.groups = static_cast<int64_t>(experts);
  op.weight_dtype = *nvfp4;
  op.compute_dtype = *nvfp4;
  op.bytes = bytes;
  op.flops = flops;
  op.impl = "vllm_trtllm_gen_moe_nvfp4";
  return op;
}

// Kimi K2.6 NVFP4 experts at TP4 on a B200 (one layer): a decode step of 64
// requests is memory-bound, t = bytes / (HBM x eff_m(bytes)); an 8K-token
// prefill chunk is compute-bound at the FP4 rate, t = flops / (FP4 peak x
// eff_c(rows per expert)), both with this kernel's own curves.
TEST(BlackwellFp4Kernels, Nvfp4ExpertsArePricedAtTheFp4RateByTheirOwnTable) {
  auto p = hw::LoadHardwareProfile("b200-sxm");
  ASSERT_TRUE(p.ok()) << p.status().message();
  auto model = sim::MakeCostModel("roofline", *p);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const hw::OpEfficiency& own = p->kernels.at("vllm_trtllm_gen_moe_nvfp4").efficiency;
  sim::StepContext ctx;

  const models::Op decode = Nvfp4Experts(512, 284, 1.775e9, 1.127e10);
  const auto d = (*model)->ExplainOps({decode}, ctx);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].table, "vllm_trtllm_gen_moe_nvfp4");
  EXPECT_EQ(d[0].bound, sim::Bound::kMemory);
  EXPECT_NEAR(d[0].seconds, decode.bytes / (p->hbm_bytes_per_s * own.memory.At(decode.bytes)),
              1e-12);

  const models::Op prefill = Nvfp4Experts(65536, 384, 4.257e9, 1.443e12);
  const auto f = (*model)->ExplainOps({prefill}, ctx);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].bound, sim::Bound::kCompute);
  const double x = 65536.0 / 384.0;
  EXPECT_NEAR(f[0].seconds, prefill.flops / (p->fp4_flops_per_s * own.compute.At(x)), 1e-12);
  // The FP8 experts' table would price the same op otherwise.
  models::Op as_fp8 = prefill;
  as_fp8.impl = "vllm_trtllm_gen_moe";
  const auto g = (*model)->ExplainOps({as_fp8}, ctx);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].table, "vllm_trtllm_gen_moe");
  EXPECT_GT(std::abs(g[0].seconds / f[0].seconds - 1), 0.05);
}

}  // namespace
}  // namespace capplan::calibrate
