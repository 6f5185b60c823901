// A calibration overlay (sim/calibration_overlay.h): its parse errors, and
// the scenario key `calibration` applying its terms as typed deployment
// fields that move the simulated figures the way they should.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/atomic_file.h"
#include "common/json_util.h"
#include "schema/run_summary.h"
#include "sim/calibration_overlay.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "tests/test_util/shell.h"

namespace capplan::sim {
namespace {

nlohmann::json Overlay(const nlohmann::json& terms) {
  return {{"format", "capplan.calibration_overlay.v1"},
          {"engine", "vllm"},
          {"engine_version", "0.8.0"},
          {"hardware", "h200-sxm"},
          {"model", "llama-3.1-8b"},
          {"provenance",
           {{"generated_by", "test"},
            {"created", "2026-12-07"},
            {"runs", {{{"case", "c"}, {"label", "c=8"}, {"date", "2026-12-01"}}}}}},
          {"terms", terms}};
}

nlohmann::json Scenario(const std::string& engine = "vllm") {
  return {{"name", "t"},
          {"model", "llama-3.1-8b"},
          {"hardware", "h200-sxm"},
          {"deployment", {{"engine", engine}, {"gpus", 1}, {"tp", 1}}},
          {"workload",
           {{"kind", "closed_loop"},
            {"concurrency", 8},
            {"num_requests", 32},
            {"input_tokens", {{"dist", "fixed"}, {"value", 256}}},
            {"output_tokens", {{"dist", "fixed"}, {"value", 64}}}}}};
}

std::string ParseError(const nlohmann::json& doc) {
  auto r = ParseCalibrationOverlay(doc, "ov.json");
  return r.ok() ? "" : r.status().message();
}

TEST(CalibrationOverlay, RoundTripsThroughItsJson) {
  auto o = ParseCalibrationOverlay(
      Overlay({{{"term", "host_s"}, {"prior", 0}, {"value", 0.002}, {"moved", true}},
               {{"term", "kernel_scale.vllm_flash_attn"}, {"prior", 1}, {"value", 1.2},
                {"moved", true}},
               {{"term", "kv_capacity_scale"}, {"prior", 1}, {"value", 1}, {"why", "no line"}}}),
      "ov.json");
  ASSERT_TRUE(o.ok()) << o.status().message();
  ASSERT_EQ(o->terms.size(), 3u);
  EXPECT_EQ(o->terms[1].kind, OverlayTermKind::kKernelScale);
  EXPECT_EQ(o->terms[1].implementation, "vllm_flash_attn");
  EXPECT_EQ(o->terms[2].why, "no line");
  auto again = ParseCalibrationOverlay(CalibrationOverlayToJson(*o), "again.json");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(CalibrationOverlayToJson(*again), CalibrationOverlayToJson(*o));
}

TEST(CalibrationOverlay, BadFieldsAreOneLineErrorsNamingFileFieldAndFix) {
  nlohmann::json d = Overlay({{{"term", "host_sec"}, {"prior", 0}, {"value", 0.002}}});
  EXPECT_NE(ParseError(d).find("ov.json: /terms/0/term"), std::string::npos) << ParseError(d);
  EXPECT_NE(ParseError(d).find("did you mean 'host_s'"), std::string::npos) << ParseError(d);
  d = Overlay({{{"term", "host_s"}, {"prior", 0}, {"value", 2.5}}});
  EXPECT_NE(ParseError(d).find("/terms/0/value"), std::string::npos) << ParseError(d);
  d = Overlay({{{"term", "kernel_scale."}, {"prior", 1}, {"value", 1}}});
  EXPECT_NE(ParseError(d).find("kernel_scale.<implementation>"), std::string::npos);
  d = Overlay({{{"term", "host_s"}, {"prior", 0}, {"value", 0}},
               {{"term", "host_s"}, {"prior", 0}, {"value", 0}}});
  EXPECT_NE(ParseError(d).find("twice"), std::string::npos) << ParseError(d);
  d = Overlay(nlohmann::json::array());
  d["format"] = "capplan.calibration_overlay.v0";
  EXPECT_NE(ParseError(d).find("/format"), std::string::npos);
  d = Overlay(nlohmann::json::array());
  d["extra"] = 1;
  EXPECT_NE(ParseError(d).find("extra"), std::string::npos);
  for (const std::string& e :
       {ParseError(Overlay({{{"term", "host_s"}, {"value", 0}}})), ParseError(nlohmann::json(3))}) {
    EXPECT_FALSE(e.empty());
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

double Tpot(const nlohmann::json& sc) {
  auto parsed = ParseScenario(sc, "t.json");
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (!parsed.ok()) return 0;
  auto run = RunScenario(**parsed, {});
  EXPECT_TRUE(run.ok()) << run.status().message();
  return run.ok() ? schema::ToJson(run->summary).at("mean_tpot_ms").get<double>() : 0;
}

TEST(CalibrationOverlay, ScenarioKeyAppliesTheTermsAsDeploymentFields) {
  const std::string path = test_util::TestTempPath("overlay.json");
  const nlohmann::json ov =
      Overlay({{{"term", "host_s"}, {"prior", 0}, {"value", 0.003}, {"moved", true}},
               {{"term", "kv_capacity_scale"}, {"prior", 1}, {"value", 0.5}, {"moved", true}}});
  ASSERT_TRUE(WriteFileAtomic(path, DumpJson(ov)).ok());
  nlohmann::json sc = Scenario();
  sc["calibration"] = path;
  auto parsed = ParseScenario(sc, "t.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const DeploymentSpec& d = (*parsed)->pools.front().deployment;
  EXPECT_DOUBLE_EQ(d.step_costs.host_s, 0.003);
  EXPECT_NE(d.step_costs.sources.at("host_s").find("calibration"), std::string::npos);
  ASSERT_TRUE(d.kv_capacity_scale.has_value());
  EXPECT_DOUBLE_EQ(*d.kv_capacity_scale, 0.5);
  ASSERT_TRUE((*parsed)->calibration.has_value());
  // 3 ms more host time per step: TPOT grows by about that much.
  const double base = Tpot(Scenario());
  EXPECT_NEAR(Tpot(sc) - base, 3.0, 0.5);
  // A deployment's own step_costs win over the overlay's.
  sc["deployment"]["step_costs"] = {{"host_s", 0.001}};
  auto own = ParseScenario(sc, "t.json");
  ASSERT_TRUE(own.ok());
  EXPECT_DOUBLE_EQ((*own)->pools.front().deployment.step_costs.host_s, 0.001);
}

TEST(CalibrationOverlay, RunTakesTheOverlaysResidualBandsForItsGroups) {
  const std::string path = test_util::TestTempPath("overlay_bands.json");
  nlohmann::json ov = Overlay({{{"term", "host_s"}, {"prior", 0}, {"value", 0}, {"moved", false}}});
  ov["bands"] = {{"tpot", {{"lo", 0.9}, {"hi", 1.2}, {"rows", 4}}}};
  ASSERT_TRUE(WriteFileAtomic(path, DumpJson(ov)).ok());
  nlohmann::json sc = Scenario();
  sc["workload"]["num_requests"] = 400;  // a steady window: no widening
  const auto run = [](const nlohmann::json& doc) {
    auto parsed = ParseScenario(doc, "t.json");
    EXPECT_TRUE(parsed.ok()) << parsed.status().message();
    auto r = RunScenario(**parsed, {});
    EXPECT_TRUE(r.ok()) << r.status().message();
    return schema::ToJson(r->summary);
  };
  const nlohmann::json shipped = run(sc);
  sc["calibration"] = path;
  const nlohmann::json calibrated = run(sc);
  const double tpot = calibrated.at("mean_tpot_ms").get<double>();
  EXPECT_NEAR(calibrated.at("mean_tpot_ms_lo").get<double>(), 0.9 * tpot, 1e-9 * tpot);
  EXPECT_NEAR(calibrated.at("mean_tpot_ms_hi").get<double>(), 1.2 * tpot, 1e-9 * tpot);
  // The shipped band was wider; a group the overlay lacks keeps it.
  EXPECT_GT(shipped.at("mean_tpot_ms_hi").get<double>() / shipped.at("mean_tpot_ms").get<double>(),
            1.2);
  EXPECT_DOUBLE_EQ(calibrated.at("mean_ttft_ms_hi").get<double>() /
                       calibrated.at("mean_ttft_ms").get<double>(),
                   shipped.at("mean_ttft_ms_hi").get<double>() /
                       shipped.at("mean_ttft_ms").get<double>());
  // A band group the simulator does not know is a one-line error.
  ov["bands"] = {{"output_throughput", {{"lo", 0.9}, {"hi", 1.2}, {"rows", 4}}}};
  const std::string e = ParseError(ov);
  EXPECT_NE(e.find("not a band group"), std::string::npos) << e;
}

TEST(CalibrationOverlay, KernelScaleMultipliesItsOpsTimeOnlyOnTheRunsGpu) {
  nlohmann::json sc = Scenario();
  const double base = Tpot(sc);
  // Every implementation the scenario's ops might run, scaled 2x: the
  // decode step, kernels only, about doubles.
  nlohmann::json terms = nlohmann::json::array();
  auto parsed = ParseScenario(sc, "t.json");
  ASSERT_TRUE(parsed.ok());
  std::set<std::string> impls;
  for (const auto& [sel, impl] :
       (*parsed)->pools.front().deployment.engine_resolution.profile->kernel_names) {
    impls.insert(impl);
  }
  for (const auto& [arch, names] :
       (*parsed)->pools.front().deployment.engine_resolution.profile->kernel_names_by_architecture) {
    for (const auto& [sel, impl] : names) impls.insert(impl);
  }
  for (const std::string& i : impls) {
    terms.push_back({{"term", "kernel_scale." + i}, {"prior", 1}, {"value", 2}, {"moved", true}});
  }
  sc["calibration"] = Overlay(terms);
  const double scaled = Tpot(sc);
  EXPECT_GT(scaled, 1.4 * base) << base << " -> " << scaled;
  EXPECT_LT(scaled, 2.2 * base) << base << " -> " << scaled;
  // Fitted on another GPU: not applied, and said so.
  nlohmann::json other = sc;
  other["calibration"]["hardware"] = "b200-sxm";
  auto p2 = ParseScenario(other, "t.json");
  ASSERT_TRUE(p2.ok());
  EXPECT_TRUE((*p2)->pools.front().deployment.kernel_scales.empty());
  ASSERT_FALSE((*p2)->calibration->notes.empty());
  EXPECT_NE((*p2)->calibration->notes.front().find("b200-sxm"), std::string::npos);
}

TEST(CalibrationOverlay, ScenarioKeyErrors) {
  nlohmann::json sc = Scenario("sglang");
  sc["calibration"] = Overlay(nlohmann::json::array());
  auto r = ParseScenario(sc, "t.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t.json: /calibration"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("fitted on vllm runs"), std::string::npos);
  sc = Scenario();
  sc["calibration"] = "no-such-overlay.json";
  r = ParseScenario(sc, "t.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/calibration"), std::string::npos);
  sc["calibration"] = 3;
  r = ParseScenario(sc, "t.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("overlay file's path or an overlay object"),
            std::string::npos);
}

}  // namespace
}  // namespace capplan::sim
