// `capplan validate --public` as a user runs it: the table is complete, every
// error and comparison ratio is finite, and no class's MAPE exceeds the bound
// validation/README.md states; bad cases (a comparison naming a row that does
// not exist among them) are one-line errors and write nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <utility>

#include "common/data_path.h"
#include "common/json_util.h"
#include "tests/test_util/shell.h"

namespace capplan::calibrate {
namespace {

using test_util::Sh;

std::string Bin() { return std::string(CAPPLAN_BIN); }

std::string TmpDir(const std::string& name) { return test_util::TestTempPath(name); }

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// "| step | 8.5 |" rows of validation/README.md's bounds table.
std::map<std::string, double> Bounds() {
  std::map<std::string, double> b;
  const std::string md = ReadText(DataPath("validation/README.md"));
  static const std::regex kRow(R"(\n\| (step|serving|energy) \| ([0-9.]+) \|)");
  for (auto it = std::sregex_iterator(md.begin(), md.end(), kRow); it != std::sregex_iterator();
       ++it) {
    b[(*it)[1]] = std::stod((*it)[2]);
  }
  return b;
}

nlohmann::json RunJson(const std::string& extra = "") {
  std::string log;
  const int rc = Sh("(" + Bin() + " validate --public --json" + extra + " 2>/dev/null)", &log);
  EXPECT_EQ(rc, 0) << log;
  auto j = ParseJson(log, "stdout");
  EXPECT_TRUE(j.ok()) << log.substr(0, 2000);
  return j.ok() ? *j : nlohmann::json();
}

TEST(CalibPublicValidation, TableCompleteFiniteAndWithinBounds) {
  const nlohmann::json v = RunJson();
  ASSERT_TRUE(v.contains("rows"));
  // Complete: every case file's rows x measured metrics, each once.
  std::map<std::string, int> expected, got;
  for (const auto& e : std::filesystem::directory_iterator(DataPath("validation/cases"))) {
    auto doc = ReadJsonFile(e.path().string());
    ASSERT_TRUE(doc.ok()) << doc.status().message();
    for (const auto& row : (*doc)["rows"]) {
      expected[(*doc)["name"].get<std::string>()] += static_cast<int>(row["measured"].size());
    }
  }
  std::map<std::string, std::pair<double, int>> mape;  // class: sum |err|, rows
  for (const auto& r : v["rows"]) {
    ++got[r["case"].get<std::string>()];
    const double measured = r["measured"].get<double>();
    EXPECT_TRUE(std::isfinite(measured) && measured > 0) << r.dump();
    if (r.contains("skipped")) {
      EXPECT_FALSE(r["skipped"].get<std::string>().empty()) << r.dump();
      continue;
    }
    ASSERT_TRUE(r["predicted"].is_number() && r["error_pct"].is_number()) << r.dump();
    const double pred = r["predicted"].get<double>(), err = r["error_pct"].get<double>();
    EXPECT_TRUE(std::isfinite(pred) && pred > 0) << r.dump();
    EXPECT_TRUE(std::isfinite(err)) << r.dump();
    EXPECT_NEAR(err, (pred / measured - 1) * 100, 1e-6) << r.dump();
    auto& m = mape[r["class"].get<std::string>()];
    m.first += std::fabs(err);
    ++m.second;
  }
  EXPECT_EQ(got, expected);
  // Every class has rows that ran, and stays within its bound.
  const auto bounds = Bounds();
  ASSERT_EQ(bounds.size(), 3u)
      << "validation/README.md must state a bound for step, serving and energy";
  for (const auto& [cls, bound] : bounds) {
    ASSERT_TRUE(mape.count(cls)) << cls << ": no row ran";
    ASSERT_GT(mape[cls].second, 0) << cls;
    const double m = mape[cls].first / mape[cls].second;
    EXPECT_NEAR(v["classes"][cls]["mape_pct"].get<double>(), m, 1e-9) << cls;
    EXPECT_LE(m, bound) << cls << " MAPE " << m << "% exceeds the bound " << bound
                        << "% in validation/README.md";
  }
  // V1 is validated in full: eight rows x three metrics, none skipped.
  int v1 = 0;
  for (const auto& r : v["rows"]) {
    if (r["case"] == "v1-sglang-deepseek-r1-h200" && !r.contains("skipped")) ++v1;
  }
  EXPECT_EQ(v1, 24);
}

// Energy rows (class "energy") run like serving rows and report their
// error (the class's MAPE bound is checked with the others above).
TEST(CalibPublicValidation, EnergyRowsRunAndReportTheirError) {
  const nlohmann::json v = RunJson();
  int ran = 0, skipped = 0;
  for (const auto& r : v["rows"]) {
    if (r["class"] != "energy") continue;
    EXPECT_EQ(r["metric"], "gpu_joules_per_output_token") << r.dump();
    if (r.contains("skipped")) {
      ++skipped;
      continue;
    }
    ++ran;
    EXPECT_GT(r["predicted"].get<double>(), 0) << r.dump();
  }
  EXPECT_GE(ran, 5);
  EXPECT_EQ(v["classes"]["energy"]["rows"].get<int>(), ran);
  EXPECT_EQ(v["classes"]["energy"]["skipped"].get<int>(), skipped);
}

// A serving row the case marks `skipped` (a format capplan cannot express)
// is listed with the case's reason; every other V2-V4 row runs.
TEST(CalibPublicValidation, ServingRowsRunUnlessTheirCaseSkipsThem) {
  const nlohmann::json v = RunJson();
  std::map<std::pair<std::string, std::string>, std::string> reason;  // (case, row): why
  int marked = 0;
  for (const char* f : {"v2-vllm-glm-5.2-weights-h200", "v3-sglang-glm-5.2-kv-h200",
                        "v4-vllm-qwen3-8b-weights-h100"}) {
    auto doc = ReadJsonFile(DataPath(std::string("validation/cases/") + f + ".json"));
    ASSERT_TRUE(doc.ok()) << doc.status().message();
    for (const auto& row : (*doc)["rows"]) {
      reason[{f, row["label"].get<std::string>()}] = row.value("skipped", "");
      marked += row.contains("skipped");
    }
  }
  EXPECT_GT(marked, 0);
  int seen = 0;
  for (const auto& r : v["rows"]) {
    auto it = reason.find({r["case"].get<std::string>(), r["row"].get<std::string>()});
    if (it == reason.end()) continue;
    ++seen;
    EXPECT_EQ(r.value("skipped", ""), it->second) << r.dump();
  }
  EXPECT_GE(seen, static_cast<int>(reason.size()));
}

// Every case's comparisons appear in the JSON, in full and with finite
// ratios; a class's mean absolute ratio difference is their mean.
TEST(CalibPublicValidation, ComparisonsAppearWithFiniteRatios) {
  const nlohmann::json v = RunJson();
  ASSERT_TRUE(v.contains("comparisons") && v["comparisons"].is_array()) << v.dump().substr(0, 500);
  std::map<std::string, int> expected, got;
  for (const auto& e : std::filesystem::directory_iterator(DataPath("validation/cases"))) {
    auto doc = ReadJsonFile(e.path().string());
    ASSERT_TRUE(doc.ok()) << doc.status().message();
    if (doc->contains("comparisons")) {
      expected[(*doc)["name"].get<std::string>()] = static_cast<int>((*doc)["comparisons"].size());
    }
  }
  std::map<std::string, std::pair<double, int>> diff;  // class: sum |difference|, count
  for (const auto& k : v["comparisons"]) {
    ++got[k["case"].get<std::string>()];
    const double measured = k["measured_ratio"].get<double>();
    EXPECT_TRUE(std::isfinite(measured) && measured > 0) << k.dump();
    if (k.contains("skipped")) {
      EXPECT_FALSE(k["skipped"].get<std::string>().empty()) << k.dump();
      EXPECT_TRUE(k["predicted_ratio"].is_null()) << k.dump();
      continue;
    }
    const double pred = k["predicted_ratio"].get<double>(), d = k["difference"].get<double>();
    EXPECT_TRUE(std::isfinite(pred) && pred > 0) << k.dump();
    EXPECT_NEAR(d, pred - measured, 1e-12) << k.dump();
    auto& s = diff[k["class"].get<std::string>()];
    s.first += std::fabs(d);
    ++s.second;
  }
  EXPECT_EQ(got, expected);
  for (const char* c : {"v2-vllm-glm-5.2-weights-h200", "v3-sglang-glm-5.2-kv-h200",
                        "v4-vllm-qwen3-8b-weights-h100"}) {
    EXPECT_GT(got[c], 0) << c;
  }
  ASSERT_GT(diff["serving"].second, 0);
  for (const auto& [cls, s] : diff) {
    EXPECT_EQ(v["classes"][cls]["comparisons"].get<int>(), s.second) << cls;
    EXPECT_NEAR(v["classes"][cls]["mean_abs_ratio_difference"].get<double>(), s.first / s.second,
                1e-9)
        << cls;
  }
}

// The S1 case and the S1 measurement records carry the same figures.
TEST(CalibPublicValidation, StepCaseMatchesItsMeasurementRecords) {
  auto recs = ReadJsonFile(
      DataPath("calibrate/measurements/public/s1-sglang-deepseek-r1-decode-h200.json"));
  auto kase = ReadJsonFile(DataPath("validation/cases/s1-sglang-deepseek-r1-decode-h200.json"));
  ASSERT_TRUE(recs.ok() && kase.ok());
  ASSERT_EQ((*recs)["records"].size(), (*kase)["rows"].size());
  for (size_t i = 0; i < (*kase)["rows"].size(); ++i) {
    const auto& rec = (*recs)["records"][i];
    const auto& row = (*kase)["rows"][i];
    EXPECT_EQ(rec["batch"], row["batch"]) << i;
    EXPECT_EQ(rec["step_ms"], row["measured"]["decode_step_ms"]) << i;
  }
}

TEST(CalibPublicValidation, OutWritesCsvMarkdownAndJson) {
  const std::string out = TmpDir("out");
  std::string log;
  ASSERT_EQ(Sh(Bin() + " validate --public --out " + out, &log), 0) << log;
  EXPECT_NE(log.find("MAPE serving"), std::string::npos) << log;
  const nlohmann::json v = RunJson();
  const std::string csv = ReadText(out + "/public-validation.csv");
  EXPECT_EQ(static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n')), v["rows"].size() + 1);
  EXPECT_EQ(csv.rfind("case,class,row,metric,", 0), 0u) << csv.substr(0, 200);
  const std::string cmp = ReadText(out + "/public-validation-comparisons.csv");
  EXPECT_EQ(static_cast<size_t>(std::count(cmp.begin(), cmp.end(), '\n')),
            v["comparisons"].size() + 1);
  EXPECT_EQ(cmp.rfind("case,class,comparison,metric,numerator,denominator,measured_ratio,", 0), 0u)
      << cmp.substr(0, 200);
  EXPECT_NE(log.find("comparisons of v3-sglang-glm-5.2-kv-h200"), std::string::npos) << log;
  EXPECT_NE(log.find("ratio diff serving"), std::string::npos) << log;
  const std::string md = ReadText(out + "/public-validation.md");
  EXPECT_NE(md.find("| serving |"), std::string::npos) << md.substr(0, 500);
  EXPECT_NE(md.find("## v1-sglang-deepseek-r1-h200 (serving)"), std::string::npos);
  EXPECT_NE(md.find("| FP8 KV/BF16 KV max-running 256 | output_throughput |"), std::string::npos);
  auto j = ReadJsonFile(out + "/public-validation.json");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["rows"], v["rows"]);
  EXPECT_EQ((*j)["comparisons"], v["comparisons"]);
}

nlohmann::json MiniCase() {
  auto doc = ReadJsonFile(DataPath("validation/cases/s2-vllm-latency-h200.json"));
  EXPECT_TRUE(doc.ok());
  nlohmann::json d = *doc;
  d["rows"] = nlohmann::json::array({d["rows"][0]});
  return d;
}

std::string WriteCase(const std::string& dir, const std::string& name, const nlohmann::json& d) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/" + name) << d.dump(1);
  return dir;
}

TEST(CalibPublicValidation, MissingProfileOrCardIsSkippedWithTheReason) {
  nlohmann::json d = MiniCase();
  d["scenario"]["hardware"] = "no-such-gpu";
  const std::string dir = WriteCase(TmpDir("skip"), "a.json", d);
  nlohmann::json c = MiniCase();
  c["name"] = "b";
  c["rows"][0]["set"] = {{"model", "no-such-model"}};
  WriteCase(dir, "b.json", c);
  const nlohmann::json v = RunJson(" --cases " + dir);
  ASSERT_EQ(v["rows"].size(), 2u) << v.dump();
  EXPECT_EQ(v["rows"][0]["skipped"], "profile no-such-gpu not found");
  EXPECT_EQ(v["rows"][1]["skipped"], "model card no-such-model not found");
  EXPECT_EQ(v["classes"]["step"]["skipped"], 2);
  EXPECT_TRUE(v["classes"]["step"]["mape_pct"].is_null());
}

TEST(CalibPublicValidation, InvalidScenarioIsOneLineErrorAndWritesNothing) {
  nlohmann::json d = MiniCase();
  d["scenario"]["deployment"]["tp"] = "1";
  const std::string dir = WriteCase(TmpDir("bad"), "bad.json", d);
  const std::string out = TmpDir("bad_out");
  std::string log;
  EXPECT_EQ(Sh(Bin() + " validate --public --cases " + dir + " --out " + out, &log), 2);
  EXPECT_NE(log.find("bad.json: /scenario/deployment/tp"), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  EXPECT_FALSE(std::filesystem::exists(out)) << "nothing half-written";

  // A case waiting for its profile is still checked now.
  d["scenario"]["hardware"] = "no-such-gpu";
  WriteCase(dir, "bad.json", d);
  EXPECT_EQ(Sh(Bin() + " validate --public --cases " + dir, &log), 2);
  EXPECT_NE(log.find("bad.json: /scenario/deployment/tp"), std::string::npos) << log;

  // A row's set that breaks the scenario says so.
  d = MiniCase();
  d["rows"][0]["set"] = {{"deployment.gpus", 3}};
  WriteCase(dir, "bad.json", d);
  EXPECT_NE(Sh(Bin() + " validate --public --cases " + dir, &log), 0);
  EXPECT_NE(log.find("bad.json: /scenario/deployment"), std::string::npos) << log;
  EXPECT_NE(log.find("(with /rows/0/set applied)"), std::string::npos) << log;

  // Malformed case fields name their JSON path.
  d = MiniCase();
  d["class"] = "servng";
  WriteCase(dir, "bad.json", d);
  EXPECT_EQ(Sh(Bin() + " validate --public --cases " + dir, &log), 2);
  EXPECT_NE(log.find("bad.json: /class"), std::string::npos) << log;
  d = MiniCase();
  d["rows"][0]["measured"] = {{"mean_e2e_ms", 800.0}};
  WriteCase(dir, "bad.json", d);
  EXPECT_EQ(Sh(Bin() + " validate --public --cases " + dir, &log), 2);
  EXPECT_NE(log.find("bad.json: /rows/0/measured/mean_e2e_ms"), std::string::npos) << log;
  EXPECT_NE(log.find("mean_e2el_ms"), std::string::npos) << "did you mean: " << log;

  EXPECT_EQ(Sh(Bin() + " validate --out " + out, &log), 2);
  EXPECT_NE(log.find("--public"), std::string::npos) << log;
}

// A comparison that names a row the case does not have, or a metric one of
// its rows does not measure, is a one-line error naming the file and the
// JSON path; a row the case marks skipped is listed with the case's reason.
TEST(CalibPublicValidation, BadComparisonIsOneLineErrorWithItsPath) {
  nlohmann::json d = MiniCase();
  nlohmann::json second = d["rows"][0];
  second["label"] = "second";
  second["skipped"] = "a format capplan cannot express";
  d["rows"].push_back(second);
  const std::string label = d["rows"][0]["label"];
  d["comparisons"] = {{{"label", "a/b"},
                       {"metric", "mean_e2el_ms"},
                       {"numerator", label},
                       {"denominator", "secnd"}}};
  const std::string dir = WriteCase(TmpDir("cmp"), "bad.json", d);
  std::string log;
  EXPECT_EQ(Sh(Bin() + " validate --public --cases " + dir, &log), 2);
  EXPECT_NE(log.find("bad.json: /comparisons/0/denominator: no row is labelled 'secnd'"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("'second'"), std::string::npos) << "did you mean: " << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;

  d["comparisons"][0]["denominator"] = "second";
  d["comparisons"][0]["metric"] = "mean_ttft_ms";
  WriteCase(dir, "bad.json", d);
  EXPECT_EQ(Sh(Bin() + " validate --public --cases " + dir, &log), 2);
  EXPECT_NE(log.find("bad.json: /comparisons/0/metric: row '" + label +
                     "' does not measure 'mean_ttft_ms'"),
            std::string::npos)
      << log;

  d["comparisons"][0]["metric"] = "mean_e2el_ms";
  d["comparisons"][0]["numertor"] = label;
  WriteCase(dir, "bad.json", d);
  EXPECT_EQ(Sh(Bin() + " validate --public --cases " + dir, &log), 2);
  EXPECT_NE(log.find("bad.json: /comparisons/0/numertor: unknown field"), std::string::npos) << log;

  d["comparisons"][0].erase("numertor");
  WriteCase(dir, "bad.json", d);
  const nlohmann::json v = RunJson(" --cases " + dir);
  ASSERT_EQ(v["rows"].size(), 2u) << v.dump();
  EXPECT_EQ(v["rows"][1]["skipped"], "a format capplan cannot express");
  ASSERT_EQ(v["comparisons"].size(), 1u) << v.dump();
  EXPECT_EQ(v["comparisons"][0]["skipped"], "row 'second' skipped");
  EXPECT_DOUBLE_EQ(v["comparisons"][0]["measured_ratio"].get<double>(), 1.0);
  EXPECT_EQ(v["classes"]["step"]["comparisons_skipped"], 1);

  d["rows"][1]["label"] = label;
  WriteCase(dir, "bad.json", d);
  EXPECT_EQ(Sh(Bin() + " validate --public --cases " + dir, &log), 2);
  EXPECT_NE(log.find("bad.json: /rows/1/label:"), std::string::npos) << log;
}

// The intervals the simulator reports are the ones today's residuals give:
// regenerating validation/intervals.json changes nothing.
TEST(CalibPublicValidation, ShippedIntervalsEqualTheResiduals) {
  const std::string d = TmpDir("intervals");
  std::filesystem::create_directories(d);
  std::string log;
  ASSERT_EQ(Sh("(" + Bin() + " validate --public --intervals-out " + d + "/intervals.json)", &log),
            0)
      << log;
  EXPECT_EQ(ReadText(d + "/intervals.json"), ReadText(DataPath("validation/intervals.json")))
      << "run: capplan validate --public --intervals-out validation/intervals.json";
  auto j = ParseJson(ReadText(d + "/intervals.json"), "intervals");
  ASSERT_TRUE(j.ok());
  for (const char* g : {"throughput", "ttft", "tpot", "e2el"}) {
    ASSERT_TRUE((*j)["groups"].contains(g)) << g;
    EXPECT_GT((*j)["groups"][g]["rows"].get<int>(), 0) << g;
  }
  // The coverage table follows the validation table.
  ASSERT_EQ(Sh(Bin() + " validate --public", &log), 0) << log;
  EXPECT_NE(log.find("prediction bands, nominal 80%: coverage leave-one-case-out"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("serving   throughput"), std::string::npos) << log;
}

}  // namespace
}  // namespace capplan::calibrate
