// A peer planner's predictions beside capplan's: the peer file's reader is
// strict (one-line errors naming the JSON path), every peer prediction is
// paired with its validation row and both MAPEs are taken on the same rows,
// and `capplan validate --public --peer FILE` prints both errors.
#include "calibrate/public_validation_peer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/data_path.h"
#include "common/json_util.h"
#include "tests/test_util/shell.h"

namespace capplan::calibrate {
namespace {

std::string Doc(const std::string& predictions, const std::string& extra = "") {
  return R"({"format": "capplan.peer_predictions.v1", "peer": "aiconfigurator",
             "peer_version": "0.12.0", "generated_by": "x", )" +
         extra + R"("predictions": )" + predictions + "}";
}

TEST(PeerPredictions, ParsesRowsAndCountsNotCovered) {
  auto p = ParsePeerPredictions(
      Doc(R"([{"case": "c", "row": "r1", "predicted": {"output_throughput": 100,
                 "mean_ttft_ms": 50}, "version_match": true, "config": {"tp_size": 8}},
              {"case": "c", "row": "r2", "predicted": {"mean_tpot_ms": 9.5}}])",
          R"("not_covered": [{"case": "c", "row": "r3", "reason": "no data"}], )"),
      "peer.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->peer, "aiconfigurator");
  EXPECT_EQ(p->peer_version, "0.12.0");
  ASSERT_EQ(p->predictions.size(), 3u);
  EXPECT_EQ(p->not_covered, 1);
  EXPECT_TRUE(p->predictions[0].version_match);
  EXPECT_FALSE(p->predictions[2].version_match);
  EXPECT_DOUBLE_EQ(p->predictions[2].predicted, 9.5);
}

TEST(PeerPredictions, BadInputIsOneLineErrorNamingThePath) {
  const struct {
    std::string doc, path_part;
  } bad[] = {
      {Doc(R"([{"case": "c", "row": "r", "predicted": {"tokens_per_s": 1}}])"),
       "/predictions/0/predicted/tokens_per_s"},
      {Doc(R"([{"case": "c", "row": "r", "predicted": {"mean_ttft_ms": -1}}])"),
       "/predictions/0/predicted/mean_ttft_ms"},
      {Doc(R"([{"case": "c", "row": "r", "predicted": {"mean_ttft_ms": 1}},
               {"case": "c", "row": "r", "predicted": {"mean_ttft_ms": 2}}])"),
       "/predictions/1/predicted/mean_ttft_ms"},
      {Doc(R"([{"case": "c", "row": "r", "predicted": {}}])"), "/predictions/0/predicted"},
      {Doc(R"([{"case": "c", "row": "r", "predictd": {"mean_ttft_ms": 1}}])"), "/predictions/0"},
      {Doc(R"({"case": "c"})"), "/predictions"},
      {R"({"format": "capplan.peer_predictions.v0", "peer": "a", "peer_version": "1",
           "predictions": []})",
       "/format"},
  };
  for (const auto& b : bad) {
    auto p = ParsePeerPredictions(b.doc, "peer.json");
    ASSERT_FALSE(p.ok()) << b.doc;
    const std::string m(p.status().message());
    EXPECT_NE(m.find("peer.json: " + b.path_part), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

PublicValidationRow Row(const std::string& label, double measured, double predicted,
                        const std::string& skipped = "") {
  PublicValidationRow r;
  r.case_name = "c";
  r.case_class = "serving";
  r.label = label;
  r.metric = "output_throughput";
  r.measured = measured;
  r.predicted = predicted;
  r.error_pct = (predicted / measured - 1) * 100;
  r.skipped = skipped;
  return r;
}

TEST(PeerPredictions, BothMapesOnTheSameRows) {
  PublicValidation v;
  v.rows = {Row("a", 100, 110), Row("b", 200, 150), Row("c", 300, 300),
            Row("d", 400, 0, "no card")};
  auto p =
      ParsePeerPredictions(Doc(R"([{"case": "c", "row": "a", "predicted": {"output_throughput": 80},
               "version_match": true},
              {"case": "c", "row": "b", "predicted": {"output_throughput": 260}},
              {"case": "c", "row": "d", "predicted": {"output_throughput": 400}}])"),
                           "peer.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  auto pv = ComparePeer(v, *p);
  ASSERT_TRUE(pv.ok()) << pv.status().message();
  ASSERT_EQ(pv->rows.size(), 2u);  // row c has no peer prediction, row d is skipped
  EXPECT_EQ(pv->capplan_skipped, 1);
  const PeerClassSummary& s = pv->classes.at("serving");
  EXPECT_EQ(s.rows, 2);
  EXPECT_NEAR(s.capplan_mape_pct, (10.0 + 25.0) / 2, 1e-9);  // row c's 0% is not in it
  EXPECT_NEAR(s.peer_mape_pct, (20.0 + 30.0) / 2, 1e-9);
  EXPECT_EQ(s.matched_rows, 1);
  EXPECT_NEAR(s.matched_capplan_mape_pct, 10.0, 1e-9);
  EXPECT_NEAR(s.matched_peer_mape_pct, 20.0, 1e-9);
  const std::string text = FormatPeerValidation(*pv);
  EXPECT_NE(text.find("MAPE serving  on the same 2 rows: capplan 17.5%, aiconfigurator 25.0%"),
            std::string::npos)
      << text;
}

TEST(PeerPredictions, StalePeerRowIsAnError) {
  PublicValidation v;
  v.rows = {Row("a", 100, 110)};
  auto p = ParsePeerPredictions(
      Doc(R"([{"case": "c", "row": "renamed", "predicted": {"output_throughput": 80}}])"),
      "peer.json");
  ASSERT_TRUE(p.ok());
  auto pv = ComparePeer(v, *p);
  ASSERT_FALSE(pv.ok());
  EXPECT_NE(pv.status().message().find(
                "peer.json: /predictions/0/predicted/output_throughput: case 'c' row 'renamed'"),
            std::string::npos)
      << pv.status().message();
}

// The command as a user runs it, on one shipped case in a folder of its own.
TEST(PeerPredictions, ValidatePublicPeerPrintsBothErrors) {
  namespace fs = std::filesystem;
  const std::string dir = test_util::TestTempPath("peer-cases");
  fs::remove_all(dir);
  fs::create_directories(dir + "/cases");
  auto doc = ReadJsonFile(DataPath("validation/cases/v8-vllm-llama-3.1-8b-fp8-h200-r1bench.json"));
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  nlohmann::json one = *doc;
  one["rows"] = nlohmann::json::array({(*doc)["rows"][0]});  // TP1 1000/2000
  const double measured = one["rows"][0]["measured"]["output_throughput"].get<double>();
  std::ofstream(dir + "/cases/v8.json") << one.dump(2);
  nlohmann::json peer = nlohmann::json::parse(Doc(
      R"([{"case": "v8-vllm-llama-3.1-8b-fp8-h200-r1bench", "row": "TP1 1000/2000",
           "predicted": {"output_throughput": 4000}}])"));
  std::ofstream(dir + "/peer.json") << peer.dump(2);
  const std::string cmd = std::string(CAPPLAN_BIN) + " validate --public --cases " + dir +
                          "/cases --peer " + dir + "/peer.json";
  std::string out;
  ASSERT_EQ(test_util::Sh(cmd + " 2>&1", &out), 0) << out;
  char peer_err[32];
  std::snprintf(peer_err, sizeof(peer_err), "%+.1f%%", (4000 / measured - 1) * 100);
  EXPECT_NE(out.find("peer aiconfigurator 0.12.0"), std::string::npos) << out;
  EXPECT_NE(out.find(peer_err), std::string::npos) << out;
  EXPECT_NE(out.find("MAPE serving  on the same 1 rows: capplan "), std::string::npos) << out;
  ASSERT_EQ(test_util::Sh(cmd + " --json", &out), 0) << out;
  auto j = ParseJson(out, "validate --json");
  ASSERT_TRUE(j.ok()) << j.status().message();
  const auto& row = (*j)["peer"]["rows"][0];
  EXPECT_NEAR(row["peer_error_pct"].get<double>(), (4000 / measured - 1) * 100, 1e-9);
  EXPECT_TRUE(std::isfinite(row["capplan_error_pct"].get<double>()));
  EXPECT_EQ((*j)["peer"]["classes"]["serving"]["rows"].get<int>(), 1);
}

}  // namespace
}  // namespace capplan::calibrate
