// Engines on Blackwell: SGLang's memory rule above 160 GiB (hand-computed
// from server_args.py) and kernel choices that depend on the GPU's
// architecture.
#include <gtest/gtest.h>

#include <cmath>

#include "models/card.h"
#include "models/engine_profile.h"
#include "models/memory.h"
#include "tests/models/layouts.h"
#include "tests/models/shipped_cards.h"

namespace capplan::models {
namespace {

using test_layouts::Tp;

// B200: nvidia-smi total 183,359 MiB.
const DeviceMemory kB200{183359LL << 20, 0};

// SGLang `version` with its defaults, unless a test sets more.
EngineMemoryOptions Sglang(const std::string& version) {
  EngineMemoryOptions opt;
  opt.engine = "sglang";
  opt.version = version;
  return opt;
}

// Kimi K2.6 over 8 B200s, TP 8, 16,384-token context.
Result<MemoryPlan> KimiOnB200(const EngineMemoryOptions& opt) {
  return test_cards::CardMemoryPlan("kimi-k2.6", Tp(8), opt, kB200, 16384);
}

TEST(BlackwellEngines, Sglang054ItemizedReserveOnB200) {
  EngineMemoryOptions opt = Sglang("0.5.4");
  auto p = KimiOnB200(opt);
  ASSERT_TRUE(p.ok()) << p.status().message();
  // chunk 16384 and graph batch 512 on GPUs of 160 GiB and more; reserve =
  // 512 + 16384 x 1.5 + 512 x 2 + 8 x 128 = 27,136 MiB;
  // (183,359 - 27,136) / 183,359 = 0.85201 -> 0.852.
  EXPECT_EQ(p->chunked_prefill_tokens, 16384);
  EXPECT_EQ(p->cuda_graph_max_bs, 512);
  EXPECT_NEAR(p->mem_fraction, 0.852, 1e-12);
  // A chunk the user sets wins over the memory class's.
  opt.chunked_prefill_tokens = 8192;
  auto q = KimiOnB200(opt);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->chunked_prefill_tokens, 8192);
  // reserve 512 + 12,288 + 1,024 + 1,024 = 14,848 MiB -> 0.919.
  EXPECT_NEAR(q->mem_fraction, 0.919, 1e-12);
}

TEST(BlackwellEngines, Sglang046FixedReserveOnB200) {
  auto p = KimiOnB200(Sglang("0.4.6"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  // reserved_mem = 32 x 1024 MiB whatever the TP size:
  // (183,359 - 32,768) / 183,359 = 0.821285...
  const double expect = (183359.0 - 32768.0) / 183359.0;
  EXPECT_NEAR(p->mem_fraction, expect, 1e-3);
}

TEST(BlackwellEngines, KernelChoiceDependsOnTheArchitecture) {
  auto r = ResolveEngine("sglang", "0.5.4");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const EngineProfile& e = *r->profile;
  const auto hopper = e.KernelNamesFor("sm90");
  const auto blackwell = e.KernelNamesFor("sm100");
  EXPECT_EQ(hopper.at("mla_decode.bf16"), "sglang_fa3_mla_decode_bf16kv");
  EXPECT_EQ(blackwell.at("mla_decode.bf16"), "sglang_trtllm_mla_decode_bf16kv");
  EXPECT_EQ(blackwell.at("moe.fp8"), "sglang_trtllm_gen_moe");
  EXPECT_EQ(e.KernelNamesFor("sm103").at("mla_decode.fp8"), "sglang_trtllm_mla_decode_fp8kv");
  // Selectors without an architecture entry keep the version's choice.
  EXPECT_EQ(blackwell.at("dense_gemm.fp8"), hopper.at("dense_gemm.fp8"));
  EXPECT_NE(e.SourceOf("kernels_by_architecture.sm100.moe.fp8").find("flashinfer_trtllm"),
            std::string::npos);
}

}  // namespace
}  // namespace capplan::models
