// The continuous-batching loop on the CPU backend, end to end, with shipped
// model cards at small dims.
#include "engine/batch_loop.h"

#include <gtest/gtest.h>

#include "engine/cpu_backend.h"
#include "engine/integrity_selftest.h"
#include "models/card.h"

namespace capplan::engine {
namespace {

SliceConfig Slice(const std::string& model, int layers, const std::string& weights = "default",
                  models::Dtype kv = models::Dtype::kBf16) {
  auto card = models::LoadModelCard(model);
  EXPECT_TRUE(card.ok()) << card.status().message();
  models::PrecisionChoice choice;
  choice.weights = weights;
  choice.kv_cache = kv;
  auto s = MakeSliceConfig(*card, /*tp=*/8, layers, "small", choice, /*seed=*/5);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

struct LoopRun {
  std::map<int64_t, RequestResult> results;
  std::vector<IterationRecord> iterations;
};

LoopRun RunLoop(const SliceConfig& slice, const std::vector<EngineRequest>& reqs, LoopOptions lo,
            const std::string& tracker = "verify") {
  auto backend = CpuBackend::Create(slice, lo.num_pages, lo.page_size);
  EXPECT_TRUE(backend.ok()) << backend.status().message();
  auto t = MakeIntegrityTracker(tracker, lo.num_pages);
  BatchLoop loop(backend->get(), t->get(), lo);
  for (const auto& r : reqs) loop.Submit(r);
  const Status st = loop.Run();
  EXPECT_TRUE(st.ok()) << st.message();
  return LoopRun{loop.results(), loop.iterations()};
}

LoopOptions Options() {
  LoopOptions lo;
  lo.page_size = 4;
  lo.num_pages = 257;
  lo.chunked_prefill_tokens = 16;
  lo.max_running = 6;
  return lo;
}

class BatchLoopModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BatchLoopModelTest, EveryRequestCompletesAndTheRecordAddsUp) {
  const SliceConfig slice = Slice(GetParam(), 2);
  const auto reqs = SyntheticRequests(10, 3, 37, 5, slice.vocab, 11);
  const LoopRun run = RunLoop(slice, reqs, Options());
  ASSERT_EQ(run.results.size(), reqs.size());
  int64_t prompt_tokens = 0, prefill_new = 0, decode_rows = 0;
  for (const auto& r : reqs) prompt_tokens += r.prompt.size();
  for (const auto& [id, r] : run.results) {
    EXPECT_FALSE(r.failed) << r.error;
    EXPECT_EQ(r.output.size(), 5u);
    EXPECT_LE(r.first_token_us, r.finish_us);
  }
  int max_decode = 0;
  for (const IterationRecord& it : run.iterations) {
    int64_t step_prefill = 0;
    for (const auto& c : it.batch.prefill) {
      EXPECT_GT(c.new_tokens, 0);
      step_prefill += c.new_tokens;
    }
    EXPECT_LE(step_prefill, 16) << "chunked prefill budget";
    prefill_new += step_prefill;
    decode_rows += it.batch.decode_context.size();
    max_decode = std::max<int>(max_decode, it.batch.decode_context.size());
    EXPECT_GT(it.measured_us, 0.0);
    EXPECT_DOUBLE_EQ(it.measured_us, it.verify_us + it.forward_us);
  }
  EXPECT_EQ(prefill_new, prompt_tokens);
  EXPECT_EQ(decode_rows, 10 * (5 - 1));  // the first token comes from prefill
  EXPECT_LE(max_decode, 6);
}

// Chunking, batch composition and physical placement must not change a
// single bit of any request's tokens.
TEST_P(BatchLoopModelTest, OutputsIndependentOfBatchingChunkingAndPagePlacement) {
  const SliceConfig slice = Slice(GetParam(), 2);
  const auto reqs = SyntheticRequests(6, 10, 33, 6, slice.vocab, 3);
  const LoopRun together = RunLoop(slice, reqs, Options());
  LoopOptions alone = Options();
  alone.max_running = 1;
  alone.chunked_prefill_tokens = 1000;
  const LoopRun serial = RunLoop(slice, reqs, alone);
  LoopOptions shuffled = Options();
  shuffled.chunked_prefill_tokens = 7;
  shuffled.page_shuffle_seed = 99;
  const LoopRun permuted = RunLoop(slice, reqs, shuffled, "none");
  for (const auto& r : reqs) {
    EXPECT_EQ(together.results.at(r.id).output, serial.results.at(r.id).output) << r.id;
    EXPECT_EQ(together.results.at(r.id).output, permuted.results.at(r.id).output) << r.id;
  }
}

TEST_P(BatchLoopModelTest, DeterministicForASeed) {
  const SliceConfig slice = Slice(GetParam(), 1);
  const auto reqs = SyntheticRequests(4, 5, 20, 4, slice.vocab, 8);
  const LoopRun a = RunLoop(slice, reqs, Options());
  const LoopRun b = RunLoop(slice, reqs, Options());
  ASSERT_EQ(a.iterations.size(), b.iterations.size());
  for (size_t i = 0; i < a.iterations.size(); ++i) {
    EXPECT_EQ(a.iterations[i].batch.decode_context, b.iterations[i].batch.decode_context);
    EXPECT_EQ(a.iterations[i].batch.prefill.size(), b.iterations[i].batch.prefill.size());
  }
  for (const auto& [id, r] : a.results) EXPECT_EQ(r.output, b.results.at(id).output);
}

INSTANTIATE_TEST_SUITE_P(ShippedCards, BatchLoopModelTest,
                         ::testing::Values("kimi-k2.6", "glm-5.2", "llama-3.1-8b"));

TEST(BatchLoopTest, AdmissionIsBoundedByKvPages) {
  const SliceConfig slice = Slice("llama-3.1-8b", 1);
  auto reqs = SyntheticRequests(6, 20, 20, 4, slice.vocab, 2);  // 24 tokens = 6 pages each
  LoopOptions lo = Options();
  lo.num_pages = 1 + 13;  // room for two requests at a time
  lo.max_running = 6;
  const LoopRun run = RunLoop(slice, reqs, lo);
  for (const auto& [id, r] : run.results) EXPECT_FALSE(r.failed) << r.error;
  for (const IterationRecord& it : run.iterations) {
    EXPECT_LE(it.batch.prefill.size() + it.batch.decode_context.size(), 2u);
  }
}

TEST(BatchLoopTest, ARequestThatCanNeverFitFailsAlone) {
  const SliceConfig slice = Slice("llama-3.1-8b", 1);
  auto reqs = SyntheticRequests(3, 8, 8, 2, slice.vocab, 4);
  reqs[1].prompt.assign(200, 1);
  LoopOptions lo = Options();
  lo.num_pages = 1 + 20;
  const LoopRun run = RunLoop(slice, reqs, lo);
  EXPECT_TRUE(run.results.at(1).failed);
  EXPECT_NE(run.results.at(1).error.find("needs 51 KV pages but the pool has 20"),
            std::string::npos)
      << run.results.at(1).error;
  EXPECT_FALSE(run.results.at(0).failed);
  EXPECT_FALSE(run.results.at(2).failed);
}

TEST(BatchLoopTest, FormatsChangeTheComputation) {
  // Sanity check that the precision knobs reach the math: FP8 KV and INT4
  // experts each perturb at least one logit.
  const auto reqs = SyntheticRequests(2, 30, 30, 1, 512, 6);
  auto logits = [&](const SliceConfig& s) {
    auto backend = CpuBackend::Create(s, 64, 4);
    EXPECT_TRUE(backend.ok());
    KvPageManager kv(64, 4);
    EXPECT_TRUE(kv.AddRequest(0).ok());
    EXPECT_TRUE(kv.Reserve(0, 30).ok());
    StepRequest r;
    r.request = 0;
    r.tokens = reqs[0].prompt;
    r.pages = &kv.PageTable(0);
    r.want_token = true;
    std::vector<int32_t> next;
    EXPECT_TRUE((*backend)->Forward({r}, nullptr, &next).ok());
    return (*backend)->last_logits().at(0);
  };
  const auto base = logits(Slice("kimi-k2.6", 2, "fp8", models::Dtype::kBf16));
  EXPECT_NE(base, logits(Slice("kimi-k2.6", 2, "fp8", models::Dtype::kFp8E4m3)));
  EXPECT_NE(base, logits(Slice("kimi-k2.6", 2, "int4", models::Dtype::kBf16)));
  EXPECT_EQ(base, logits(Slice("kimi-k2.6", 2, "fp8", models::Dtype::kBf16)));
}

}  // namespace
}  // namespace capplan::engine
