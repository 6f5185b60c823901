// The CUDA backend walks the slice's layer program op by op: it must have a
// function for every op a step can run, for every shipped card. This needs
// no device (CudaBackend::CheckProgram), so it runs wherever the CUDA
// backend is built, unlike engine_cuda_gpu_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "engine/cuda_backend.h"
#include "models/card.h"
#include "models/layer_program.h"

namespace capplan::engine {
namespace {

TEST(CudaProgram, EveryShippedCardsProgramHasAFunctionForEveryOp) {
  int checked = 0;
  for (const std::string& name : models::ShippedModelNames()) {
    auto card = models::LoadModelCard(name);
    ASSERT_TRUE(card.ok()) << card.status().message();
    for (int tp : {1, 8}) {
      if (card->num_heads % tp != 0) continue;
      for (const std::string dims : {"small", "full"}) {
        for (models::Dtype kv : {models::Dtype::kBf16, models::Dtype::kFp8E4m3}) {
          models::PrecisionChoice choice;
          choice.kv_cache = kv;
          auto slice = MakeSliceConfig(*card, tp, std::min(3, card->num_layers), dims, choice, 3);
          if (!slice.ok()) continue;  // a format the engine has no GEMM for
          const Status s = CudaBackend::CheckProgram(*slice);
          EXPECT_TRUE(s.ok()) << name << " tp" << tp << " " << dims << ": " << s.message();
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 11 * 2);
}

// An op the backend has no function for is refused by name, not skipped.
TEST(CudaProgram, AnOpWithoutAFunctionIsRefused) {
  auto card = models::LoadModelCard("kimi-k2.6");
  ASSERT_TRUE(card.ok()) << card.status().message();
  auto slice = MakeSliceConfig(*card, 8, 2, "small", models::PrecisionChoice{}, 3);
  ASSERT_TRUE(slice.ok()) << slice.status().message();
  ASSERT_TRUE(CudaBackend::CheckProgram(*slice).ok());
  auto model = std::make_shared<models::ShardedModel>(*slice->program);
  auto program = std::make_shared<models::LayerProgram>(*model->program);
  program->layer_ops.front().id = "attn.unknown_proj";
  program->layer_ops.front().kind = models::OpKind::kKvVerify;
  model->program = program;
  SliceConfig broken = *slice;
  broken.program = model;
  const Status s = CudaBackend::CheckProgram(broken);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("attn.unknown_proj"), std::string::npos) << s.message();
}

// Hybrid and window-limited cards: their linear-attention and windowed ops
// have no CUDA kernel, and the backend says which instead of running a
// full-context or projection kernel in their place.
TEST(CudaProgram, OpsWithoutACudaKernelAreRefusedByName) {
  const std::pair<const char*, const char*> cases[] = {
      {"qwen3-next-80b-a3b", "linear_attn."},
      {"llama-4-scout-17b-16e-instruct", ".window"},
  };
  for (const auto& [name, op] : cases) {
    auto card = models::LoadModelCard(std::string(HF_TEST_DATA) + "/" + name);
    ASSERT_TRUE(card.ok()) << card.status().message();
    models::PrecisionChoice choice;
    choice.weights = "fp8";
    auto slice = MakeSliceConfig(*card, 1, 4, "small", choice, 3);
    ASSERT_TRUE(slice.ok()) << name << ": " << slice.status().message();
    const Status s = CudaBackend::CheckProgram(*slice);
    EXPECT_FALSE(s.ok()) << name;
    EXPECT_NE(s.message().find(op), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("CPU backend"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace capplan::engine
