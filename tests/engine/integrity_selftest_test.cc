// Every fault kind injected into a running batch: detected 100%, zero false
// positives, every other request bit-identical to the fault-free run.
#include "engine/integrity_selftest.h"

#include <gtest/gtest.h>

#include "models/card.h"

namespace capplan::engine {
namespace {

// Two faults of every kind on a small-dims, 2-layer, FP8-KV slice of `model`.
void SmallSliceOptions(const std::string& model, SelftestOptions* o) {
  auto card = models::LoadModelCard(model);
  ASSERT_TRUE(card.ok()) << card.status().message();
  models::PrecisionChoice choice;
  choice.kv_cache = models::Dtype::kFp8E4m3;
  auto slice = MakeSliceConfig(*card, 8, 2, "small", choice, 3);
  ASSERT_TRUE(slice.ok()) << slice.status().message();
  o->slice = *slice;
  o->faults_per_kind = 2;
}

class SelftestTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SelftestTest, AllFaultsDetectedNoFalsePositivesOthersBitIdentical) {
  SelftestOptions o;
  ASSERT_NO_FATAL_FAILURE(SmallSliceOptions(GetParam(), &o));
  auto rep = RunIntegritySelftest(o);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  EXPECT_EQ(rep->injected, 6);
  for (const char* kind : {"mis_map", "swap", "stale_reuse"}) {
    EXPECT_EQ(rep->injected_by_kind[kind], 2) << kind;
    EXPECT_EQ(rep->detected_by_kind[kind], 2) << kind;
  }
  EXPECT_EQ(rep->detected, rep->injected);
  EXPECT_EQ(rep->false_positives, 0);
  EXPECT_GT(rep->unaffected_total, 0);
  EXPECT_EQ(rep->unaffected_ok, rep->unaffected_total);
  // The faults are real: without verification some affected outputs change.
  EXPECT_GT(rep->corrupted_without_verify, 0);
  EXPECT_TRUE(rep->Passed());
  ASSERT_FALSE(rep->failures.empty());
  EXPECT_NE(rep->failures[0].find("KV integrity"), std::string::npos) << rep->failures[0];
}

INSTANTIATE_TEST_SUITE_P(ShippedCards, SelftestTest,
                         ::testing::Values("kimi-k2.6", "glm-5.2", "llama-3.1-8b"));

// The CUDA backend's tracker (engine/device_verifying_tracker.h) with the
// verification kernel's CPU reference in place of the launch: the same
// faults, the same verdicts as the host tracker. What it cannot show here is
// the kernel itself on a GPU (engine_cuda_gpu_test does, with a device).
class KernelReferenceSelftestTest : public ::testing::TestWithParam<std::string> {};

TEST_P(KernelReferenceSelftestTest, MatchesTheHostTrackerFaultForFault) {
  SelftestOptions o;
  ASSERT_NO_FATAL_FAILURE(SmallSliceOptions(GetParam(), &o));
  auto host = RunIntegritySelftest(o);
  ASSERT_TRUE(host.ok()) << host.status().message();
  o.verify_impl = "kernel_reference";
  auto ref = RunIntegritySelftest(o);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  EXPECT_EQ(ref->injected, 6);
  EXPECT_EQ(ref->detected, ref->injected);
  for (const char* kind : {"mis_map", "swap", "stale_reuse"}) {
    EXPECT_EQ(ref->detected_by_kind[kind], 2) << kind;
  }
  EXPECT_EQ(ref->false_positives, 0);
  EXPECT_EQ(ref->unaffected_ok, ref->unaffected_total);
  EXPECT_TRUE(ref->Passed()) << ref->ToJson().dump();
  // Same faults placed, same requests failed, as the host tracker.
  EXPECT_EQ(ref->affected_total, host->affected_total);
  EXPECT_EQ(ref->unaffected_total, host->unaffected_total);
  EXPECT_EQ(ref->failures.size(), host->failures.size());
}

INSTANTIATE_TEST_SUITE_P(ShippedCards, KernelReferenceSelftestTest,
                         ::testing::Values("kimi-k2.6", "glm-5.2"));

}  // namespace
}  // namespace capplan::engine
