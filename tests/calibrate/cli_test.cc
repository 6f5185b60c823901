// `capplan calibrate` and `capplan validate` as a user runs them.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hw/profile.h"
#include "common/data_path.h"
#include "common/json_util.h"
#include "tests/test_util/expect_text.h"
#include "tests/test_util/shell.h"

namespace capplan::calibrate {
namespace {

using test_util::ExpectContains;

using test_util::Sh;

std::string Tmp(const std::string& name) { return test_util::TestTempPath(name); }

// `capplan calibrate ARGS`: its exit status, and its output in *log.
int Calibrate(const std::string& args, std::string* log) {
  return Sh(std::string(CAPPLAN_BIN) + " calibrate " + args, log);
}

// Synthetic GEMM + elementwise + launch records generated from known curves
// (eff(x) = max x / (x + half)) with the shipped profile's ceilings.
nlohmann::json Synthetic(bool dry_run) {
  const double hbm = 4.3e12, rate = 989.5e12;  // calibrate/profiles/h200-sxm.json ceilings
  nlohmann::json recs = nlohmann::json::array();
  for (int nk : {512, 4096}) {
    for (int m = 1; m <= 8192; m *= 4) {
      const double flops = 2.0 * m * nk * nk, bytes = 2.0 * (2.0 * m * nk + 1.0 * nk * nk);
      const double tc = flops / (rate * 0.7 * m / (m + 100.0));
      const double tm = bytes / (hbm * 0.85 * bytes / (bytes + 3e6));
      recs.push_back({{"kernel", "gemm_bf16"},
                      {"op_class", "dense_gemm"},
                      {"dtype", "bf16"},
                      {"weight_dtype", "bf16"},
                      {"shape", {{"m", m}, {"n", nk}, {"k", nk}}},
                      {"median_us", std::max(tc, tm) * 1e6},
                      {"bytes", bytes},
                      {"flops", flops}});
    }
  }
  for (double mb : {0.1, 1.0, 10.0, 100.0}) {
    const double bytes = mb * 1e6;
    recs.push_back({{"kernel", "fused_add_rmsnorm"},
                    {"op_class", "elementwise"},
                    {"dtype", "bf16"},
                    {"shape", {{"tokens", 64}, {"hidden", 7168}}},
                    {"median_us", (bytes + 2e6) / (hbm * 0.9) * 1e6},
                    {"bytes", bytes},
                    {"flops", 0.0}});
  }
  for (double us : {3.5, 4.5}) {
    recs.push_back({{"kernel", "kernel_launch"},
                    {"op_class", "overhead"},
                    {"dtype", "none"},
                    {"shape", nlohmann::json::object()},
                    {"median_us", us},
                    {"bytes", 0.0},
                    {"flops", 0.0}});
  }
  recs.push_back({{"kernel", "all_reduce"},
                  {"op_class", "communication"},
                  {"dtype", "bf16"},
                  {"shape", {{"bytes", 1024}}},
                  {"median_us", 9.0},
                  {"bytes", 1024.0},
                  {"flops", 0.0}});
  return {{"format", "capplan.measurements.v1"},
          {"gpu", dry_run ? "cpu" : "NVIDIA H200"},
          {"driver", dry_run ? "" : "580.1"},
          {"cuda", "13.0"},
          {"commit", "abc1234"},
          {"date", "2026-11-29T23:10:00Z"},
          {"dry_run", dry_run},
          {"records", recs}};
}

TEST(CalibCli, CalibrateWritesAProfileWithProvenanceAndReport) {
  const std::string meas = Tmp("h200.json"), out = Tmp("fitted.json"), rep = Tmp("fit.md");
  std::ofstream(meas) << Synthetic(false).dump(1);
  std::string log;
  ASSERT_EQ(Calibrate(meas + " --out " + out + " --report " + rep, &log), 0) << log;
  ExpectContains(log, "gemm_bf16");
  auto p = hw::LoadHardwareProfile(out);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const hw::EfficiencyCurve& c = p->efficiency.at("gemm_bf16").compute;
  EXPECT_EQ(c.provenance.kind, "fitted");
  ExpectContains(c.provenance.source, "h200.json (gpu NVIDIA H200, driver 580.1");
  EXPECT_NEAR(c.max, 0.7, 0.01);
  EXPECT_GE(c.fit_points, 2);
  EXPECT_GE(c.loo_median_rel_err, 0);
  EXPECT_LT(c.loo_median_rel_err, 0.01);  // noise-free: held-out points predicted exactly
  EXPECT_NEAR(p->efficiency.at("elementwise").memory.max, 0.9, 0.01);
  EXPECT_DOUBLE_EQ(p->efficiency.at("elementwise").memory.valid_lo, 1e5);
  EXPECT_NEAR(p->kernel_launch_s, 4e-6, 1e-12);
  EXPECT_EQ(p->provenance.at("overheads.kernel_launch_s").kind, "fitted");
  // The report names what no kernel record can fit.
  std::ifstream rin(rep);
  const std::string report((std::istreambuf_iterator<char>(rin)), {});
  ExpectContains(report, "no kernel record fits");
  ExpectContains(report, "- `collectives.all_reduce.latency_s`");
  EXPECT_EQ(report.find("- `overheads.kernel_launch_s`"), std::string::npos) << report;
  // Not fitted: keeps the base profile's provenance.
  EXPECT_EQ(p->efficiency.at("grouped_gemm").compute.provenance.kind, "anchor");
  auto shipped = hw::LoadHardwareProfile("h200-sxm");
  ASSERT_TRUE(shipped.ok()) << shipped.status().message();
  EXPECT_EQ(p->provenance.at("collectives.all_reduce.latency_s").source,
            shipped->provenance.at("collectives.all_reduce.latency_s").source);
  std::ifstream in(rep);
  const std::string md((std::istreambuf_iterator<char>(in)), {});
  ExpectContains(md, "| gemm_bf16 | compute |");
  ExpectContains(md, "collectives are not fitted");

  // The simulator runs on it and names its provenance.
  ASSERT_EQ(Sh(std::string(CAPPLAN_BIN) + " simulate " +
                   DataPath("scenarios/kimi-k2.6-kv-fp8.json") + " --set hardware=" + out +
                   " --set workload.num_requests=8 --set workload.warmup_requests=0"
                   " --set workload.concurrency=4 --json",
               &log),
            0)
      << log;
  EXPECT_NE(log.find("\"fitted\""), std::string::npos) << log.substr(0, 2000);
}

TEST(CalibCli, DryRunRefusedThenMarked) {
  const std::string meas = Tmp("dry.json"), out = Tmp("dry_profile.json");
  std::ofstream(meas) << Synthetic(true).dump();
  std::string log;
  EXPECT_EQ(Calibrate(meas + " --out " + out, &log), 1);
  ExpectContains(log, "dry-run");
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  ASSERT_EQ(Calibrate(meas + " --allow-dry-run --out " + out, &log), 0) << log;
  auto p = hw::LoadHardwareProfile(out);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->efficiency.at("gemm_bf16")
                .memory.provenance.source.rfind("dry-run CPU timings, not a GPU", 0),
            0u);
  EXPECT_EQ(p->gpu, "cpu");
}

TEST(CalibCli, ExtremeMeasurementsAreOneLineErrorsNotCrashes) {
  const std::string meas = Tmp("extreme.json");
  nlohmann::json d = Synthetic(false);
  d["records"][2]["median_us"] = INT64_MAX;
  std::ofstream(meas) << d.dump();
  std::string log;
  EXPECT_EQ(Calibrate(meas + " --out " + Tmp("x.json"), &log), 2);
  ExpectContains(log, "extreme.json: /records/2/median_us: must be in (0, 1e9]");
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  d = Synthetic(false);
  d["records"][2]["p10_us"] = d["records"][2]["median_us"].get<double>() * 2;
  std::ofstream(meas) << d.dump();
  EXPECT_EQ(Calibrate(meas + " --out " + Tmp("x.json"), &log), 2);
  ExpectContains(log, "/records/2/p10_us: must be <= median_us");
}

TEST(CalibCli, BadInputsAreOneLineErrors) {
  const std::string meas = Tmp("bad.json");
  nlohmann::json d = Synthetic(false);
  d["records"][3]["median_us"] = -1.0;
  std::ofstream(meas) << d.dump();
  std::string log;
  EXPECT_EQ(Calibrate(meas + " --out " + Tmp("x.json"), &log), 2);
  ExpectContains(log, "bad.json: /records/3/median_us");
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  EXPECT_EQ(Calibrate(meas, &log), 2);
  ExpectContains(log, "--out");
  // --base takes any shipped profile by name, with "did you mean".
  std::ofstream(meas) << Synthetic(false).dump();
  EXPECT_EQ(Calibrate(meas + " --base h100-sx --out " + Tmp("y.json"), &log), 2);
  ExpectContains(log, "did you mean 'h100-sxm'");
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
}

TEST(CalibCli, ValidateRoundTripsACpuEngineRun) {
  const std::string run = Tmp("run.json");
  std::string log;
  ASSERT_EQ(Sh(std::string(CAPPLAN_BIN) + " engine serve-bench --scenario " +
                   DataPath("scenarios/kimi-k2.6-kv-fp8.json") +
                   " --num-requests 3 --concurrency 2 --input-len 24 --output-len 3 --out " + run,
               &log),
            0)
      << log;
  ASSERT_EQ(Sh(std::string(CAPPLAN_BIN) + " validate " + run, &log), 0) << log;
  ExpectContains(log, "per-iteration error");
  ExpectContains(log, "note: this run used the CPU backend");
  // The engine's per-op times beside the simulator's price of the same ids.
  ExpectContains(log, "forward by op id");
  ExpectContains(log, "\n  moe.experts ");
  ExpectContains(log, "\n  attn.mla_decode ");
  ASSERT_EQ(Sh("(" + std::string(CAPPLAN_BIN) + " validate " + run + " --json 2>/dev/null)", &log),
            0);
  auto j = ParseJson(log, "stdout");
  ASSERT_TRUE(j.ok()) << log;
  auto doc = ReadJsonFile(run);
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ((*j)["iterations"], (*doc)["iterations"].size());
  EXPECT_EQ(Sh(std::string(CAPPLAN_BIN) + " validate " + Tmp("nope.json"), &log) != 0, true);
}

// Public records calibrate cannot fit yet (other GPUs, bus bandwidths, step
// records) are reported, not errors. Alone on the H200 profile, the H200
// kernel-database records fit only their kernels' tables: every efficiency
// class keeps the base's curves.
TEST(CalibCli, CalibrateReportsPublicRecordsItCannotFitYet) {
  const std::string dir = DataPath("calibrate/measurements/public");
  const std::string out = Tmp("public_only.json"), rep = Tmp("public_only.md");
  std::string log;
  ASSERT_EQ(Calibrate(dir + "/*.json --out " + out + " --report " + rep, &log), 0) << log;
  ExpectContains(log, "curves in 0 classes and ");
  ExpectContains(log, "sglang_marlin_moe");
  ExpectContains(log,
                 "public H100 record: informs H200 efficiency only as a fraction of the "
                 "H100's own peak");
  ExpectContains(log, "step record (decode)");
  auto fitted = ReadJsonFile(out);
  auto base = ReadJsonFile(DataPath("calibrate/profiles/h200-sxm.json"));
  ASSERT_TRUE(fitted.ok() && base.ok());
  EXPECT_EQ((*fitted)["efficiency"], (*base)["efficiency"]);
  const std::string marlin =
      (*fitted)["kernels"]["sglang_marlin_moe"]["memory"]["provenance"]["source"];
  ExpectContains(marlin, "aic-h200-sglang-marlin-moe");
  EXPECT_EQ(marlin.find("aic-h100"), std::string::npos) << marlin;  // H100 has no ceilings here
  std::ifstream in(rep);
  const std::string md((std::istreambuf_iterator<char>(in)), {});
  ExpectContains(md, "s1-sglang-deepseek-r1-decode-h200.json /records/6");

  // With an engine file: that file is fitted, the public ones are listed,
  // and the profile's GPU and provenance name only the engine file.
  const std::string meas = Tmp("h200_engine.json"), out2 = Tmp("engine_plus_public.json");
  std::ofstream(meas) << Synthetic(false).dump();
  ASSERT_EQ(Calibrate(meas + " " + dir + "/*.json --out " + out2, &log), 0) << log;
  auto p = hw::LoadHardwareProfile(out2);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->gpu, "NVIDIA H200");
  const std::string& src = p->efficiency.at("gemm_bf16").compute.provenance.source;
  ExpectContains(src, "h200_engine.json");
  EXPECT_EQ(src.find("https://"), std::string::npos) << src;
}

}  // namespace
}  // namespace capplan::calibrate
