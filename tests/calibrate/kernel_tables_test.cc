// Kernel implementations: the profile's "kernels" tables (own curves or an
// explicit assumption), the engines' choice per op, pricing by the chosen
// table with a warning for every assumed or missing one, and the
// leave-one-source-out error of a fit.
#include <gtest/gtest.h>

#include <set>

#include "calibrate/fit.h"
#include "common/data_path.h"
#include "common/json_util.h"
#include "hw/profile.h"
#include "models/engine_profile.h"
#include "models/kernel_choice.h"
#include "models/ops.h"
#include "sim/cost_model.h"
#include "sim/scenario.h"
#include "sim/simulate.h"

namespace capplan::calibrate {
namespace {

nlohmann::json BaseDoc() {
  auto doc = ReadJsonFile(DataPath("calibrate/profiles/base/h200-sxm.json"));
  EXPECT_TRUE(doc.ok());
  return *doc;
}

nlohmann::json Curve(double max, double half, const char* x) {
  return {{"max", max},
          {"half", half},
          {"x", x},
          {"valid", {1, 1e12}},
          {"provenance", {{"kind", "anchor"}, {"source", "test"}}}};
}

// A grouped-GEMM table of its own (memory max 0.75, no floor) and one
// assumed from it.
nlohmann::json TwoMoeTables() {
  nlohmann::json doc = BaseDoc();
  doc["kernels"] = {{"fast_moe",
                     {{"efficiency_class", "grouped_gemm"},
                      {"compute", Curve(0.5, 1, "m_per_group")},
                      {"memory", Curve(0.75, 0, "bytes")}}},
                    {"other_moe",
                     {{"efficiency_class", "grouped_gemm"},
                      {"assumed_from", "fast_moe"},
                      {"reason", "same kernel family"}}}};
  return doc;
}

TEST(KernelTables, OwnAndAssumedTablesLoad) {
  auto p = hw::ParseHardwareProfile(TwoMoeTables(), "t.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const hw::KernelTable& other = p->kernels.at("other_moe");
  EXPECT_TRUE(other.assumed());
  EXPECT_DOUBLE_EQ(other.efficiency.memory.max, 0.75);  // the source's curves
}

TEST(KernelTables, AssumptionsAreOneStepAndOfTheSameClass) {
  nlohmann::json doc = BaseDoc();
  doc["kernels"] = {{"a",
                     {{"efficiency_class", "grouped_gemm"},
                      {"compute", Curve(0.5, 1, "m_per_group")},
                      {"memory", Curve(0.75, 0, "bytes")}}},
                    {"b", {{"efficiency_class", "grouped_gemm"}, {"assumed_from", "a"},
                           {"reason", "r"}}},
                    {"c", {{"efficiency_class", "grouped_gemm"}, {"assumed_from", "b"},
                           {"reason", "r"}}}};
  auto chain = hw::ParseHardwareProfile(doc, "t.json");
  ASSERT_FALSE(chain.ok());
  EXPECT_NE(chain.status().message().find("/kernels/c"), std::string::npos)
      << chain.status().message();
  doc["kernels"].erase("c");
  doc["kernels"]["b"]["efficiency_class"] = "attention_decode";
  auto cls = hw::ParseHardwareProfile(doc, "t.json");
  ASSERT_FALSE(cls.ok());
  EXPECT_NE(cls.status().message().find("not attention_decode"), std::string::npos)
      << cls.status().message();
}

TEST(KernelTables, EnginesChooseByOpAndFormat) {
  auto e = models::ResolveEngine("sglang", "0.5.4");
  ASSERT_TRUE(e.ok()) << e.status().message();
  const models::KernelChoices& k = e->profile->kernels;
  EXPECT_EQ(k.For(models::OpKind::kGroupedGemm, models::Dtype::kInt4), "sglang_marlin_moe");
  EXPECT_EQ(k.For(models::OpKind::kGroupedGemm, models::Dtype::kFp8E4m3),
            "sglang_triton_fused_moe");
  // A later entry overrides one selector and keeps the rest.
  EXPECT_EQ(k.For(models::OpKind::kMlaDecode, models::Dtype::kBf16),
            "sglang_fa3_mla_decode_bf16kv");
  EXPECT_EQ(k.For(models::OpKind::kElementwise, models::Dtype::kBf16), "");
  auto bad = models::KernelChoices::FromSelectors({{"moe.int5", "x"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("moe.int4"), std::string::npos)  // did you mean
      << bad.status().message();
}

models::Op MoeOp(std::string_view impl) {
  models::Op op;
  op.kind = models::OpKind::kGroupedGemm;
  op.op_class = models::OpClass::kMoe;
  op.name = "moe.experts";
  op.m = 8;
  op.groups = 8;
  op.bytes = 1e8;
  op.impl = impl;
  return op;
}

// A memory-bound op under a table of max 0.75 and half 0 takes bytes /
// (0.75 hbm); under an assumed table the same, with a warning that widens
// the intervals; a kernel with no table falls back to its class, warned.
TEST(KernelTables, OpsArePricedByTheirKernelsTable) {
  auto p = hw::ParseHardwareProfile(TwoMoeTables(), "t.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  auto model = sim::MakeCostModel("roofline", *p);
  ASSERT_TRUE(model.ok());
  sim::StepContext ctx;
  const double expect = 1e8 / (0.75 * p->hbm_bytes_per_s);
  std::set<std::string> w;
  const double own = (*model)->PriceOps({MoeOp("fast_moe")}, ctx, &w).seconds;
  EXPECT_NEAR(own - p->kernel_launch_s, expect, 1e-12);
  EXPECT_TRUE(w.empty());
  const double assumed = (*model)->PriceOps({MoeOp("other_moe")}, ctx, &w).seconds;
  EXPECT_DOUBLE_EQ(assumed, own);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w.begin()->find(sim::kAssumedKernelText), std::string::npos) << *w.begin();
  w.clear();
  const double missing = (*model)->PriceOps({MoeOp("no_such_moe")}, ctx, &w).seconds;
  const double cls = (*model)->PriceOps({MoeOp("")}, ctx, nullptr).seconds;
  EXPECT_DOUBLE_EQ(missing, cls);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w.begin()->find("no_such_moe"), std::string::npos);
  const std::vector<sim::OpPrice> ex = (*model)->ExplainOps({MoeOp("other_moe")}, ctx);
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_EQ(ex[0].table, "other_moe");
  EXPECT_EQ(ex[0].table_kind, "assumed from fast_moe");
  EXPECT_EQ(ex[0].bound, sim::Bound::kMemory);
  EXPECT_NEAR(ex[0].seconds, expect, 1e-12);
}

// Two sources on different lines t = a + bytes / r: each held-out source is
// predicted by the exact fit of the other (two points, two parameters), so
// its error is the distance between the lines at its points.
TEST(KernelTables, LeaveOneSourceOutPredictsEachSourceFromTheOthers) {
  auto prof = hw::LoadHardwareProfile("h200-sxm");
  ASSERT_TRUE(prof.ok());
  const double hbm = prof->hbm_bytes_per_s;
  std::vector<FitPoint> pts;
  // Source 0 on t = 10us + bytes/(0.8 hbm); source 1 on t = 10us + bytes/(0.4 hbm).
  for (int s = 0; s < 2; ++s) {
    for (double mb : {100.0, 400.0}) {
      FitPoint p;
      p.bytes = mb * 1e6;
      p.t_s = 10e-6 + p.bytes / ((s == 0 ? 0.8 : 0.4) * hbm);
      p.source = s;
      pts.push_back(p);
    }
  }
  const ClassFit f = FitClass("elementwise", pts, prof->efficiency.at("elementwise"), hbm);
  ASSERT_EQ(f.holdouts.size(), 2u);
  for (const SourceHoldout& h : f.holdouts) {
    EXPECT_TRUE(h.refitted);
    EXPECT_EQ(h.points, 2);
    // Held out, each source is predicted by the other's exact line: far off.
    EXPECT_GT(h.median_rel_err, 0.3) << h.source;
    EXPECT_LT(h.in_sample_median, h.median_rel_err) << h.source;
  }
  EXPECT_GT(f.held_out_median, 0.3);
}

nlohmann::json KimiScenario() {
  return nlohmann::json::parse(R"({
    "name": "t", "model": "kimi-k2.6", "hardware": "h200-sxm",
    "deployment": {"engine": "sglang", "engine_version": "0.5.4", "gpus": 8, "tp": 8,
                   "kv_cache": "fp8"},
    "workload": {"kind": "closed_loop", "concurrency": 2, "num_requests": 4,
                 "client": "lock_step", "input_tokens": {"dist": "fixed", "value": 256},
                 "output_tokens": {"dist": "fixed", "value": 8}, "seed": 1}})");
}

// A deployment names another kernel for a selector: runs price it (and a
// kernel of the FA3 FP8-KV path, dequantizing the pool every layer, is far
// slower than FlashMLA's); a name the profile has no table for, or an
// unknown selector, is a one-line error at its JSON path.
TEST(KernelTables, ADeploymentOverridesTheEnginesKernel) {
  auto run = [](const nlohmann::json& doc) -> Result<double> {
    CAPPLAN_ASSIGN_OR_RETURN(auto sc, sim::ParseScenario(doc, "t.json"));
    CAPPLAN_ASSIGN_OR_RETURN(sim::RunResult r, sim::RunScenario(*sc, sim::RunOptions{}));
    return r.summary.tpot.mean.value_or(0);
  };
  auto engine = run(KimiScenario());
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  nlohmann::json doc = KimiScenario();
  doc["deployment"]["kernels"] = {{"mla_decode.fp8", "sglang_fa3_mla_decode_fp8kv"}};
  auto fa3 = run(doc);
  ASSERT_TRUE(fa3.ok()) << fa3.status().message();
  EXPECT_GT(*fa3, *engine);
  doc["deployment"]["kernels"] = {{"mla_decode.fp8", "sglang_fa3_mla_decode_fp9kv"}};
  auto typo = run(doc);
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("/deployment/kernels/mla_decode.fp8"), std::string::npos)
      << typo.status().message();
  EXPECT_NE(typo.status().message().find("sglang_fa3_mla_decode_fp8kv"), std::string::npos);
  doc["deployment"]["kernels"] = {{"mla_decod.fp8", "x"}};
  auto sel = sim::ParseScenario(doc, "t.json");
  ASSERT_FALSE(sel.ok());
  EXPECT_NE(sel.status().message().find("mla_decode.fp8"), std::string::npos)
      << sel.status().message();
}

}  // namespace
}  // namespace capplan::calibrate
