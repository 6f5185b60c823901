// The CPU backend runs hybrid layers for real: a Gated DeltaNet layer
// carries each request's conv and recurrent state from step to step (a
// prompt in one chunk or two gives the same logits), and a window-limited
// layer reads only the keys its window leaves (a change before the window
// does not reach the last token).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/cpu_backend.h"
#include "models/card.h"

namespace capplan::engine {
namespace {

std::vector<PageRef> Pages(int r) {
  std::vector<PageRef> p;
  for (int i = 0; i < 8; ++i) p.push_back(PageRef{1 + 8 * r + i, 0});
  return p;
}

StepRequest Request(int64_t id, const std::vector<int32_t>& tokens, int64_t start, int n,
                    bool want, const std::vector<PageRef>* pages) {
  StepRequest s;
  s.request = id;
  s.start_position = start;
  s.tokens.assign(tokens.begin() + start, tokens.begin() + start + n);
  s.pages = pages;
  s.want_token = want;
  return s;
}

SliceConfig Slice(const std::string& model, int layers, const std::string& weights) {
  auto card = models::LoadModelCard(std::string(HF_TEST_DATA) + "/" + model);
  EXPECT_TRUE(card.ok()) << card.status().message();
  models::PrecisionChoice choice;
  choice.weights = weights;
  auto slice = MakeSliceConfig(*card, 1, layers, "small", choice, 5);
  EXPECT_TRUE(slice.ok()) << slice.status().message();
  return *slice;
}

// The logits of the last token of `tokens`, prefilled in chunks of `chunk`.
std::vector<float> LastLogits(const SliceConfig& slice, const std::vector<int32_t>& tokens,
                              int chunk) {
  auto backend = CpuBackend::Create(slice, 64, 4);
  EXPECT_TRUE(backend.ok()) << backend.status().message();
  const std::vector<PageRef> pages = Pages(0);
  std::vector<int32_t> next;
  const int n = static_cast<int>(tokens.size());
  for (int start = 0; start < n; start += chunk) {
    const int len = std::min(chunk, n - start);
    Status st = (*backend)->Forward({Request(7, tokens, start, len, start + len == n, &pages)},
                                    nullptr, &next);
    EXPECT_TRUE(st.ok()) << st.message();
  }
  return (*backend)->last_logits().at(0);
}

std::vector<int32_t> Prompt(int n, int32_t first) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(i == 0 ? first : (11 * i + 5) % 97);
  return t;
}

TEST(HybridCpu, LinearStateCarriesAcrossSteps) {
  const SliceConfig slice = Slice("qwen3-next-80b-a3b", 4, "default");
  ASSERT_EQ(slice.program->program->GroupOf(0)->mixer, models::LayerMixer::kLinear);
  ASSERT_NE(slice.program->program->GroupOf(3)->mixer, models::LayerMixer::kLinear);
  const std::vector<int32_t> prompt = Prompt(13, 3);
  const std::vector<float> whole = LastLogits(slice, prompt, 13);
  for (float v : whole) ASSERT_TRUE(std::isfinite(v));
  EXPECT_EQ(LastLogits(slice, prompt, 5), whole);  // chunks of 5, 5, 3
  EXPECT_EQ(LastLogits(slice, prompt, 1), whole);  // token by token (decode steps)
  // The state is the request's: another first token changes the last logits.
  EXPECT_NE(LastLogits(slice, Prompt(13, 4), 13), whole);
}

// One layer, window 8 at small dims: the 12th token's attention sees
// positions 4..11 (sliding) or 8..11 (its chunk), never token 0.
TEST(HybridCpu, WindowLimitedLayersDoNotSeeBeforeTheirWindow) {
  for (const char* model : {"gpt-oss-120b", "llama-4-scout-17b-16e-instruct"}) {
    const SliceConfig slice = Slice(model, 1, "fp8");
    ASSERT_EQ(slice.program->program->groups.size(), 1u) << model;
    EXPECT_EQ(LastLogits(slice, Prompt(12, 3), 12), LastLogits(slice, Prompt(12, 4), 12)) << model;
  }
  // A full-attention layer sees token 0.
  auto card = models::LoadModelCard("llama-3.1-8b");
  ASSERT_TRUE(card.ok());
  auto full = MakeSliceConfig(*card, 1, 1, "small", models::PrecisionChoice{}, 5);
  ASSERT_TRUE(full.ok());
  EXPECT_NE(LastLogits(*full, Prompt(12, 3), 12), LastLogits(*full, Prompt(12, 4), 12));
}

}  // namespace
}  // namespace capplan::engine
