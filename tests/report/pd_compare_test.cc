// PD summaries and the PD-vs-co-located comparison, on the hand-made pair in
// data/pd (round numbers, so every delta below is worked out by hand).
#include "report/pd_compare.h"

#include <gtest/gtest.h>

#include "report/brief.h"
#include "report/formats.h"
#include "report/pd_summary.h"
#include "report/report.h"
#include "report/text_util.h"
#include "tests/report/report_test_data.h"
#include "tests/test_util/expect_text.h"

namespace capplan::report {
namespace {

using test_util::ExpectContains;
using test_util::ExpectErrorContains;

const std::string kPd = std::string(REPORT_TEST_DATA) + "/pd/pd_demo.json";
const std::string kTwin = std::string(REPORT_TEST_DATA) + "/pd/pd_demo_colocated.json";

Analysis Analyzed(const std::vector<std::string>& files) {
  return test_data::Analyzed(test_data::Loaded(files));
}

const Table& FindPdTable(const std::vector<Table>& tables) {
  for (const auto& t : tables) {
    if (t.id == "pd_vs_colocated") return t;
  }
  ADD_FAILURE() << "no pd_vs_colocated table";
  return tables.front();
}

std::string Cell(const Table& t, size_t row, const std::string& column) {
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (t.columns[c] == column) return t.rows.at(row).at(c);
  }
  ADD_FAILURE() << "no column " << column;
  return "";
}

TEST(ReportPd, PdSummaryReadsPoolsAndMergesTheirDeployments) {
  auto r = LoadResults({kPd});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Summary& s = r->front();
  ASSERT_TRUE(s.pd.has_value());
  EXPECT_EQ(s.gpus, 16);
  EXPECT_EQ(s.pd->prefill.gpus, 8);
  EXPECT_DOUBLE_EQ(s.pd->decode.utilization, 0.9);
  EXPECT_EQ(s.pd->decode.weights, "int4");
  EXPECT_DOUBLE_EQ(*s.pd->mean_exposed_transfer_ms, 2.5);
  EXPECT_EQ(s.DeploymentField("weights"), "P:fp8 D:int4");
  EXPECT_EQ(s.DeploymentField("kv_cache"), "fp8");
  EXPECT_EQ(s.DeploymentField("replicas"), "1P:1D");
  EXPECT_EQ(s.DeploymentField("phase"), "disaggregated");
  // KV figures are the decode pool's.
  EXPECT_DOUBLE_EQ(*s.kv_capacity_tokens, 1000000);
  // Decode is busier, so its shares (memory-bound) say what binds.
  const Binding b = AnalyzeBinding(s);
  EXPECT_EQ(b.binds, "decode pool: HBM bandwidth");
  ExpectContains(b.headroom, "prefill pool busy 40%, decode pool busy 90%");
  ExpectContains(b.headroom, "exposed KV transfer mean 2.5 ms");
}

TEST(ReportPd, PdSummaryWithoutPoolsIsRejectedWithItsPath) {
  auto doc = nlohmann::json::parse(R"({"disaggregated": true, "output_throughput": 1,
                                       "gpus": 16, "deployment": {}})");
  auto r = ParseSummary(doc, "x.json");
  ExpectErrorContains(r, "x.json: /pools: required field is missing");
}

TEST(ReportPd, ComparisonShowsHandComputedDeltas) {
  // Twin first: the pairing is by name, not by order.
  Analysis a = Analyzed({kTwin, kPd});
  const auto pairs = PdPairs(a);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].pd, 1);
  EXPECT_EQ(pairs[0].twin, 0);
  const std::vector<Table> tables = BuildTables(a);
  const Table& t = FindPdTable(tables);
  ASSERT_EQ(t.rows.size(), 3u);
  struct Expect {
    size_t row;
    const char* column;
    std::string text;
  };
  const Expect expected[] = {
      {0, "role", "PD 1P:1D"},
      {0, "gpus_per_pool", "8P+8D"},
      {0, "prefill_utilization", "40%"},
      {0, "decode_utilization", "90%"},
      {0, "exposed_transfer_mean_ms", "2.5"},
      {0, "exposed_transfer_p99_ms", "4"},
      // $2/GPU-h x 16 GPUs / 3600 / 4000 tok/s x 1e6 = $2.22/M; twin at 3200 tok/s: $2.78/M.
      {0, "usd_per_million_output_tokens", "2.22"},
      {1, "role", "co-located twin"},
      {1, "usd_per_million_output_tokens", "2.78"},
      {1, "decode_utilization", "n/a"},
      {2, "role", "PD vs twin"},
      {2, "gpus", "0"},
      {2, "output_tok_s", "+25%"},                               // 4000 / 3200 - 1
      {2, "output_tok_s_per_gpu", "+25%"},                       // 250 / 200 - 1
      {2, "mean_ttft_ms", "+50%"},                               // 600 / 400 - 1
      {2, "p99_ttft_ms", FormatChange(-0.2)},                    // 1200 / 1500 - 1
      {2, "mean_tpot_ms", FormatChange(-0.2)},                   // 20 / 25 - 1
      {2, "p99_tpot_ms", FormatChange(-0.25)},                   // 30 / 40 - 1
      {2, "usd_per_million_output_tokens", FormatChange(-0.2)},  // 3200 / 4000 - 1
  };
  for (const Expect& e : expected) {
    EXPECT_EQ(Cell(t, e.row, e.column), e.text) << "row " << e.row << " " << e.column;
  }
  // The report's opening summary says the same in one line.
  const auto cmp = Comparisons(a);
  ASSERT_EQ(cmp.size(), 1u);
  EXPECT_TRUE(cmp[0].pd);
  EXPECT_TRUE(a.points[cmp[0].point].summary->pd.has_value());
  EXPECT_FALSE(a.points[cmp[0].base].summary->pd.has_value());
  const std::string line = ComparisonLine(a, cmp[0]);
  ExpectContains(line, "pd-demo [B] vs pd-demo-colocated [A] (");
  ExpectContains(line, "3200\u21924000 out tok/s (+25%)");
  ExpectContains(line, "$2.78\u21922.22 /M out tok (" + FormatChange(-0.2) + ")");
}

TEST(ReportPd, TwinWithTheSameWorkloadWinsAndMissingTwinIsSaid) {
  auto r = LoadResults({kTwin, kTwin, kPd});
  ASSERT_TRUE(r.ok());
  (*r)[0].workload["request_rate"] = 4.0;  // first twin ran another load
  auto a = Analyze(std::move(*r), {});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(PdPairs(*a)[0].twin, 1);

  Analysis alone = Analyzed({kPd});
  const auto pairs = PdPairs(alone);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].twin, -1);
  const std::vector<Table> tables = BuildTables(alone);
  const Table& t = FindPdTable(tables);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(Cell(t, 1, "role"), "no twin: no result named pd-demo-colocated");
  EXPECT_TRUE(Comparisons(alone).empty());
}

TEST(ReportPd, NoPdResultsNoTable) {
  Analysis a = Analyzed({kTwin});
  EXPECT_FALSE(PdComparisonTable(a).has_value());
}

TEST(ReportPd, MarkdownCarriesTheComparison) {
  auto r = LoadResults({kPd, kTwin});
  ASSERT_TRUE(r.ok());
  auto md = RenderReport(std::move(*r), "md", {});
  ASSERT_TRUE(md.ok()) << md.status().message();
  EXPECT_NE(md->find("## PD vs co-located twin"), std::string::npos);
  // pd-demo-colocated is too long a label for a table column: A and B, with
  // the legend saying which is which.
  EXPECT_NE(md->find("| A | pd-demo |"), std::string::npos) << *md;
  EXPECT_NE(md->find("| B | pd-demo-colocated |"), std::string::npos) << *md;
  EXPECT_NE(md->find("| A | PD vs twin | 0 |  | +25% | +25% | +50% |"), std::string::npos) << *md;
}

}  // namespace
}  // namespace capplan::report
