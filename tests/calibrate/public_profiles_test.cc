// `capplan calibrate --public`: the shipped profiles are exactly its output,
// other Hopper GPUs' kernel records inform a profile only as fractions of
// their own GPU's ceilings, W4A16 experts get their own derived class, and
// the per-step fixed costs come from the step cases, per engine version.
#include "calibrate/public_profiles.h"

#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "common/json_util.h"
#include "hw/op_pricing.h"
#include "models/engine_step_costs.h"

namespace capplan::calibrate {
namespace {

const PublicProfiles& Fitted() {
  static const Result<PublicProfiles> kFit = FitPublicProfiles(
      DataPath("calibrate/profiles/base"), DataPath("calibrate/measurements/public"),
      DataPath("validation/cases"), DataPath("calibrate/step_costs_base.json"));
  EXPECT_TRUE(kFit.ok()) << kFit.status().message();
  return kFit.value();
}

TEST(PublicProfiles, ShippedFilesEqualTheCommandsOutput) {
  const PublicProfiles& p = Fitted();
  ASSERT_EQ(p.docs.size(), 6u);  // H100, H200, B200, B300, GB200, GB300
  for (const auto& [name, doc] : p.docs) {
    auto shipped = ReadFile(DataPath("calibrate/profiles/" + name + ".json"));
    ASSERT_TRUE(shipped.ok()) << shipped.status().message();
    EXPECT_EQ(*shipped, DumpJson(doc) + "\n")
        << "calibrate/profiles/" << name
        << ".json is stale: run build/capplan calibrate --public (calibrate/README.md)";
  }
  auto shipped = ReadFile(DataPath("models/engine_step_costs.json"));
  ASSERT_TRUE(shipped.ok()) << shipped.status().message();
  EXPECT_EQ(*shipped, DumpJson(p.step_costs) + "\n")
      << "models/engine_step_costs.json is stale: run build/capplan calibrate --public";
}

TEST(PublicProfiles, CrossGpuRecordsEnterAsFractionsOfTheirOwnPeak) {
  const PublicProfiles& p = Fitted();
  // The FlashMLA decode records ran on an H100: the H200 profile gets the
  // same efficiency (a fraction of HBM), not the H100's time.
  const ClassFit& h200 = p.fits.at("h200-sxm").classes.at("attention_decode");
  const ClassFit& h100 = p.fits.at("h100-sxm").classes.at("attention_decode");
  ASSERT_TRUE(h200.memory.fitted);
  EXPECT_NEAR(h200.memory.max, h100.memory.max, 1e-12);
  for (const FitPoint& pt : h200.points) {
    EXPECT_EQ(pt.gpu_model, "H100");
    EXPECT_DOUBLE_EQ(pt.hbm, p.bases.at("h100-sxm").hbm_bytes_per_s);
  }
  const std::string src =
      p.docs.at("h200-sxm")["efficiency"]["attention_decode"]["memory"]["provenance"]["source"];
  EXPECT_NE(src.find("H100 records enter as fractions of h100-sxm's ceilings"), std::string::npos)
      << src;
  // H800 records are normalized by the H100 profile, and say so.
  EXPECT_NE(p.fits.at("h200-sxm").cross_gpu.at("H800").find("H800 has the H100's"),
            std::string::npos);
  // Every fitted class reports its leave-one-out error.
  for (const auto& [name, fit] : p.fits) {
    for (const auto& [cls, cf] : fit.classes) {
      if (cf.points.size() < 2) continue;
      EXPECT_EQ(cf.loo_rel_err.size(), cf.points.size()) << name << " " << cls;
    }
  }
}

// W4A16 MoE experts are priced by the engines' Marlin MoE tables, fitted
// from records of that kernel only: they stream 55-90% of HBM at decode,
// not the dense Marlin GEMM's rate, and each table reports its error on the
// sources it did not see.
TEST(PublicProfiles, MarlinMoeHasItsOwnFittedTable) {
  for (const std::string name : {"h200-sxm", "h100-sxm"}) {
    auto prof = hw::ParseHardwareProfile(Fitted().docs.at(name), name);
    ASSERT_TRUE(prof.ok()) << prof.status().message();
    for (const char* impl : {"sglang_marlin_moe", "vllm_marlin_moe"}) {
      const hw::KernelTable& t = prof->kernels.at(impl);
      EXPECT_FALSE(t.assumed()) << name << " " << impl;
      EXPECT_EQ(t.efficiency_class, "grouped_gemm_int4");
      EXPECT_EQ(t.efficiency.memory.provenance.kind, "fitted") << name << " " << impl;
      EXPECT_GT(t.efficiency.memory.max, 0.55) << name << " " << impl;
      EXPECT_LT(t.efficiency.memory.max, 0.9) << name << " " << impl;
      EXPECT_GT(t.efficiency.memory.fit_points, 100) << name << " " << impl;
      EXPECT_GE(t.efficiency.memory.held_out_source_median_rel_err, 0) << name << " " << impl;
    }
    // The dense W4A16 records fit the dense class only.
    EXPECT_LT(prof->efficiency.at("gemm_int4").memory.max,
              0.75 * prof->efficiency.at("gemm_bf16").memory.max)
        << name;
  }
  // Every fitted class and kernel table reports its held-out-source error.
  for (const auto& [name, fit] : Fitted().fits) {
    for (const auto* tables : {&fit.classes, &fit.kernels}) {
      for (const auto& [key, cf] : *tables) {
        EXPECT_FALSE(cf.holdouts.empty()) << name << " " << key;
        EXPECT_GE(cf.held_out_median, 0) << name << " " << key;
      }
    }
  }
}

TEST(PublicProfiles, StepFixedCostsAreFittedWithTheirError) {
  const PublicProfiles& p = Fitted();
  EXPECT_GE(p.step.rows.size(), 10u);
  EXPECT_LE(p.step.mape_after, p.step.mape_before + 1e-9);
  for (const auto& [name, doc] : p.docs) {
    const nlohmann::json& prov =
        doc[nlohmann::json::json_pointer("/collectives/all_reduce/latency_s")]["provenance"];
    EXPECT_EQ(prov["kind"], "fitted") << name;
    EXPECT_NE(prov["source"].get<std::string>().find("leave-one-out"), std::string::npos);
    // The replay's own fixed cost keeps its anchor: the engines carry the rest.
    EXPECT_NE(doc["overheads"]["graph_launch_s"]["provenance"]["kind"], "fitted") << name;
  }
  // Each engine version with public step data gets its own fitted host cost.
  auto table = models::ParseEngineStepCosts(p.step_costs.dump(), "generated");
  ASSERT_TRUE(table.ok()) << table.status().message();
  const models::EngineStepCosts& sglang = models::PickStepCosts(table->at("sglang"), {0, 4, 5});
  const models::EngineStepCosts& vllm8 = models::PickStepCosts(table->at("vllm"), {0, 8, 0});
  const models::EngineStepCosts& vllm19 = models::PickStepCosts(table->at("vllm"), {0, 19, 1});
  EXPECT_EQ(sglang.sources.at("host_s").rfind("fitted: ", 0), 0u) << sglang.sources.at("host_s");
  EXPECT_EQ(vllm8.sources.at("cpu_schedule_s").rfind("fitted: ", 0), 0u);
  EXPECT_EQ(vllm19.sources.at("host_s").rfind("fitted: ", 0), 0u);
  // Host costs per step stay within what a serving loop can spend.
  for (const models::EngineStepCosts* c : {&sglang, &vllm8, &vllm19}) {
    EXPECT_GE(c->host_s, 0);
    EXPECT_LT(c->host_s + c->cpu_schedule_s, 0.02);
  }
  // vLLM 0.8.0 runs its scheduler between steps, 0.19 overlaps it.
  EXPECT_GT(vllm8.cpu_schedule_s + vllm8.host_s, vllm19.host_s);
  const std::string md = PublicProfilesMarkdown(p);
  EXPECT_NE(md.find("## Per-step fixed costs"), std::string::npos);
  EXPECT_NE(md.find("sglang 0.4.0 host_s"), std::string::npos);
}

}  // namespace
}  // namespace capplan::calibrate

namespace capplan::calibrate {
namespace {

// Blackwell profiles are fitted from Blackwell records only: an SM90 record
// never enters an SM100 table, nor the reverse.
TEST(PublicProfiles, RecordsLendOnlyWithinAnArchitecture) {
  const PublicProfiles& p = Fitted();
  auto b200 = hw::ParseHardwareProfile(p.docs.at("b200-sxm"), "b200");
  ASSERT_TRUE(b200.ok()) << b200.status().message();
  const hw::KernelTable& moe = b200->kernels.at("sglang_trtllm_gen_moe");
  EXPECT_FALSE(moe.assumed());
  EXPECT_EQ(moe.efficiency.memory.provenance.kind, "fitted");
  EXPECT_GT(moe.efficiency.memory.fit_points, 0);
  const std::string& src = moe.efficiency.memory.provenance.source;
  EXPECT_NE(src.find("B200"), std::string::npos) << src;
  EXPECT_EQ(src.find("H200"), std::string::npos) << src;
  EXPECT_EQ(src.find("H100"), std::string::npos) << src;
  auto h200 = hw::ParseHardwareProfile(p.docs.at("h200-sxm"), "h200");
  ASSERT_TRUE(h200.ok());
  const std::string& h = h200->kernels.at("trtllm_mla_decode_bf16kv").efficiency.memory.provenance.source;
  EXPECT_EQ(h.find("B200"), std::string::npos) << h;
  EXPECT_EQ(h.find("GB200"), std::string::npos) << h;
  EXPECT_EQ(GpuModelOf("NVIDIA GB200 NVL72"), "GB200");
  EXPECT_EQ(GpuModelOf("NVIDIA B200 SXM"), "B200");
  EXPECT_EQ(GpuModelOf("NVIDIA H200 SXM"), "H200");
}

}  // namespace
}  // namespace capplan::calibrate

#include "calibrate/refit.h"

namespace capplan::calibrate {
namespace {

Result<VersionDriftData> ShippedDrift() {
  const std::string path = DataPath("calibrate/measurements/aic-version-drift.json");
  CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseVersionDrift(text, "calibrate/measurements/aic-version-drift.json");
}

// A table's drift is its own files' worst same-kernel-source pair; one with
// only generic stand-ins takes the median over every same-source pair.
TEST(CalibVersionDrift, SameKernelSourcePairsOnlyElseTheStatedDefault) {
  auto d = ShippedDrift();
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_GT(d->rows.size(), 300u);
  // SGLang 0.5.9's and 0.5.10's Marlin MoE rows against 0.5.14's: median
  // ratios 1.133 and 1.2113, p90 of |r - 1| over the two pairs 0.2035.
  const hw::VersionDrift marlin = TableVersionDrift(*d, {{"H200", "sglang-marlin-moe-kimi-k2"}});
  EXPECT_NEAR(marlin.value, 0.2035, 1e-3);
  EXPECT_NE(marlin.source.find("0.5.10 vs 0.5.14"), std::string::npos) << marlin.source;
  EXPECT_NE(marlin.source.find("over this table's 2 same-kernel-source"), std::string::npos)
      << marlin.source;
  // vLLM's Marlin MoE at other releases is a generic stand-in only.
  const hw::VersionDrift vllm = TableVersionDrift(*d, {{"H200", "vllm-marlin-moe-kimi-k2"}});
  EXPECT_EQ(vllm.source.rfind("default", 0), 0u) << vllm.source;
  EXPECT_NEAR(vllm.value, 0.08885, 1e-4);
  EXPECT_EQ(TableVersionDrift(*d, {}).value, vllm.value);
}

TEST(CalibVersionDrift, MalformedRowsAreOneLineErrorsNamingTheField) {
  const std::string head =
      R"({"format": "capplan.aic_version_drift.v1", "url": "https://x", "rows": [)";
  const std::string row =
      R"({"gpu": "H200", "file": "f", "engine": "vllm", "pinned_version": "0.24.0",
          "version": "0.14.0", "rows_at_version": "same kernel source", "shapes": 3, )";
  auto bad = ParseVersionDrift(
      head + row + R"("median_ratio": 2, "p10_ratio": 0.9, "p90_ratio": 1.1}]})", "d.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("d.json"), std::string::npos);
  EXPECT_NE(bad.status().message().find("/rows/0/median_ratio"), std::string::npos)
      << bad.status().message();
  EXPECT_EQ(bad.status().message().find('\n'), std::string::npos);
  auto missing = ParseVersionDrift(head + row + R"("median_ratio": 1}]})", "d.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("p10_ratio"), std::string::npos)
      << missing.status().message();
  auto extra = ParseVersionDrift(
      head + row + R"("median_ratio": 1, "p10_ratio": 0.9, "p90_ratio": 1.1, "x": 1}]})",
      "d.json");
  ASSERT_FALSE(extra.ok());
  EXPECT_NE(extra.status().message().find("/rows/0/x"), std::string::npos)
      << extra.status().message();
  EXPECT_TRUE(ParseVersionDrift(
                  head + row + R"("median_ratio": 1, "p10_ratio": 0.9, "p90_ratio": 1.1}]})",
                  "d.json")
                  .ok());
}

}  // namespace
}  // namespace capplan::calibrate
