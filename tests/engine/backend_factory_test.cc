// Backend selection: cpu always; cuda only with a device, and never a silent
// CPU fallback. Runs everywhere (no gpu label): without a device it checks
// the error; with one it checks that the CUDA backend really is what ran.
#include "engine/backend_factory.h"

#include <gtest/gtest.h>

#include "models/card.h"
#include "tests/test_util/expect_text.h"

namespace capplan::engine {
namespace {

using test_util::ExpectErrorContains;

SliceConfig SmallSlice() {
  auto card = models::LoadModelCard("kimi-k2.6");
  EXPECT_TRUE(card.ok()) << card.status().message();
  models::PrecisionChoice choice;
  auto s = MakeSliceConfig(*card, 8, 2, "small", choice, 1);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

TEST(BackendFactoryTest, CpuIsAlwaysThere) {
  BackendOptions o;
  o.num_pages = 64;
  o.page_size = 16;
  auto b = MakeEngineBackend(SmallSlice(), o);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ((*b)->name(), "cpu");
  EXPECT_EQ((*b)->gpu_name(), "cpu");
}

TEST(BackendFactoryTest, CudaIsTheCudaBackendOrAOneLineErrorNeverACpuFallback) {
  BackendOptions o;
  o.name = "cuda";
  o.num_pages = 64;
  o.page_size = 16;
  o.max_step_tokens = 64;
  auto b = MakeEngineBackend(SmallSlice(), o);
  if (b.ok()) {
    EXPECT_TRUE(CudaBackendBuilt());
    EXPECT_EQ((*b)->name(), "cuda");
    EXPECT_NE((*b)->gpu_name(), "cpu");
    return;
  }
  EXPECT_EQ(b.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(b.status().message().rfind("no CUDA device: use --backend cpu", 0), 0u)
      << b.status().message();
  EXPECT_EQ(b.status().message().find('\n'), std::string::npos);
}

TEST(BackendFactoryTest, UnknownBackendIsAUsageErrorWithASuggestion) {
  BackendOptions o;
  o.name = "cudaa";
  auto b = MakeEngineBackend(SmallSlice(), o);
  ExpectErrorContains(b, StatusCode::kUsage, "did you mean 'cuda'");
}

}  // namespace
}  // namespace capplan::engine
