// Public engine logs reproduced by the memory rules: the KV pool each log
// printed, within 0.5%. The expected numbers are written here from the logs;
// nothing in models/ is fitted to them except the two vLLM activation
// parameters, which come from two rows (Llama-3.1-8B and Qwen3-8B, see
// models/engines/vllm.json) and are checked against the other nine.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "models/card.h"
#include "models/memory.h"
#include "tests/models/layouts.h"

namespace capplan::models {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

using test_layouts::Tp;

double Error(double predicted, double measured) { return predicted / measured - 1; }

// SGLang 0.4.5.post3, DeepSeek-R1 (FP8 128x128 blocks), 8xH200 TP8, launched
// with defaults (llm-ie-benchmarks sgl/logs/sgl-0.4.5.post3-deepseek-r1.log):
//   server_args: mem_fraction_static=0.9074083090470262, page_size=1, BF16 KV
//   TP1-6: "Init torch distributed ends. mem usage=1.96 GB"
//   TP1-6: "Load weight begin. avail mem=137.24 GB"
//   all:   "Load weight end ... mem usage=81.64 GB"
//   all:   "KV Cache is allocated. #tokens: 654280, KV size: 42.82 GB"
TEST(CapacityValidation, SglangDeepSeekR1On8xH200) {
  auto card = LoadModelCard("deepseek-v3");
  ASSERT_TRUE(card.ok());
  EngineMemoryOptions opt;
  opt.engine = "sglang";
  opt.version = "0.4.5.post3";
  opt.page_size = 1;
  const DeviceMemory h200{143771LL << 20, 0};
  auto p = PlanMemory(*card, Tp(8), PrecisionChoice{}, opt, h200, 4096);
  ASSERT_TRUE(p.ok()) << p.status().message();
  // The version's own default fraction is the one the log resolved.
  EXPECT_NEAR(p->mem_fraction, 0.9074083090470262, 1e-12);
  const double free_after_init =
      h200.reported_bytes - p->Term("startup_bytes") - p->Term("communicator_bytes");
  EXPECT_NEAR(free_after_init / kGiB, 137.24, 0.005);
  EXPECT_LT(std::abs(Error(p->weights_resident_bytes, 81.64 * kGiB)), 0.005)
      << p->weights_resident_bytes / kGiB;
  const double err = Error(p->kv_capacity_tokens, 654280);
  std::printf("C1 sglang deepseek-r1 tp8: predicted %lld, logged 654280, error %+.3f%%\n",
              static_cast<long long>(p->kv_capacity_tokens), 100 * err);
  EXPECT_LT(std::abs(err), 0.005);
}

// vLLM 0.19.0 on one H100 80GB node (llm-d-planner PR 205,
// accuracy/results/v0.19.0): gpu_memory_utilization 0.95, max_model_len
// 8192, max_num_batched_tokens 8192, max_num_seqs 1024, prefix caching off;
// "worker init memory snapshot: ... total_memory=79.19GiB".
struct VllmRow {
  const char* card;
  const char* weights;  // PrecisionChoice.weights
  bool fp8_kv;
  int tp;
  int64_t logged_tokens;
};

TEST(CapacityValidation, VllmOnH100) {
  const VllmRow rows[] = {
      {"llama-3.1-8b", "default", false, 1, 476016},
      {"llama-3.1-8b", "default", true, 1, 952032},
      {"llama-3.1-8b", "fp8", false, 1, 529248},
      {"llama-3.1-8b", "int4", false, 1, 554704},
      {"llama-3.1-8b", "default", false, 2, 1044688},
      {"llama-3.1-8b", "default", false, 4, 2209792},
      {"llama-3.3-70b", "fp8", false, 2, 244304},
      {"llama-3.3-70b", "fp8", false, 4, 708992},
      {"qwen3-8b", "default", false, 1, 418688},
      {"qwen3-30b-a3b", "default", false, 1, 168288},
      {"deepseek-v2-lite", "default", false, 1, 1505552},
  };
  // nvidia-smi's 81,559 MiB; the runtime's 79.19 GiB.
  const DeviceMemory h100{81559LL << 20, static_cast<int64_t>(79.19 * kGiB)};
  double worst = 0;
  for (const VllmRow& r : rows) {
    auto card = LoadModelCard(r.card);
    ASSERT_TRUE(card.ok()) << card.status().message();
    PrecisionChoice choice;
    choice.weights = r.weights;
    choice.kv_cache = r.fp8_kv ? Dtype::kFp8E4m3 : Dtype::kBf16;
    EngineMemoryOptions opt;
    opt.engine = "vllm";
    opt.version = "0.19.0";
    opt.mem_fraction = 0.95;
    auto p = PlanMemory(*card, Tp(r.tp), choice, opt, h100, 8192);
    ASSERT_TRUE(p.ok()) << r.card << ": " << p.status().message();
    const double err = Error(p->kv_capacity_tokens, r.logged_tokens);
    std::printf("C2 vllm %-16s %-7s kv %-4s tp%d: predicted %9lld, logged %9lld, error %+.3f%%\n",
                r.card, r.weights, r.fp8_kv ? "fp8" : "bf16", r.tp,
                static_cast<long long>(p->kv_capacity_tokens),
                static_cast<long long>(r.logged_tokens), 100 * err);
    EXPECT_LT(std::abs(err), 0.005) << r.card << " " << r.weights << " tp" << r.tp;
    worst = std::max(worst, std::abs(err));
  }
  std::printf("C2 worst |error| %.3f%%\n", 100 * worst);
}

}  // namespace
}  // namespace capplan::models
