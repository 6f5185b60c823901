// `capplan validate --public` as a user runs it: the table is complete, every
// error is finite, and no class's MAPE exceeds the bound validation/README.md
// states; bad cases are one-line errors and write nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "common/data_path.h"
#include "common/json_util.h"
#include "tests/test_util/shell.h"

namespace capplan::calibrate {
namespace {

using test_util::Sh;

std::string Bin() { return std::string(CAPPLAN_BIN); }

std::string TmpDir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "pubval_" + std::to_string(::getpid()) + "_" + name;
  std::filesystem::remove_all(d);
  return d;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// "| step | 8.5 |" rows of validation/README.md's bounds table.
std::map<std::string, double> Bounds() {
  std::map<std::string, double> b;
  const std::string md = ReadText(DataPath("validation/README.md"));
  static const std::regex kRow(R"(\n\| (step|serving) \| ([0-9.]+) \|)");
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
  // Both classes have rows that ran, and stay within their bounds.
  const auto bounds = Bounds();
  ASSERT_EQ(bounds.size(), 2u) << "validation/README.md must state a bound for step and serving";
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
  const std::string md = ReadText(out + "/public-validation.md");
  EXPECT_NE(md.find("| serving |"), std::string::npos) << md.substr(0, 500);
  EXPECT_NE(md.find("## v1-sglang-deepseek-r1-h200 (serving)"), std::string::npos);
  auto j = ReadJsonFile(out + "/public-validation.json");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["rows"], v["rows"]);
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
  for (const char* g : {"output_throughput", "ttft", "tpot"}) {
    ASSERT_TRUE((*j)["groups"].contains(g)) << g;
    EXPECT_LE((*j)["groups"][g]["ratio_lo"].get<double>(),
              (*j)["groups"][g]["ratio_hi"].get<double>());
  }
  std::filesystem::remove_all(d);
}

}  // namespace
}  // namespace capplan::calibrate
