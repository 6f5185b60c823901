// What makes a report read well: short labels with a legend, the opening
// summary, latency charts with the SLO, tables that scroll inside their own
// box, and no directory of the machine that made the report.
#include "report/brief.h"

#include <gtest/gtest.h>

#include "common/json_util.h"
#include "report/formats.h"
#include "report/report.h"
#include "report/tables.h"
#include "report/text_util.h"
#include "tests/report/report_test_data.h"

namespace capplan::report {
namespace {

using test_data::Analyzed;
using test_data::Count;
using test_data::kData;
using test_data::KimiFiles;
using test_data::Loaded;

// The text of one chart's <svg>...</svg>.
std::string Chart(const std::string& html, const std::string& id) {
  const size_t start = html.find("data-chart=\"" + id + "\"");
  if (start == std::string::npos) return "";
  return html.substr(start, html.find("</svg>", start) - start);
}

TEST(ReportLabels, LettersUnlessEveryLabelIsShort) {
  EXPECT_EQ(LetterLabel(0), "A");
  EXPECT_EQ(LetterLabel(25), "Z");
  EXPECT_EQ(LetterLabel(26), "AA");
  EXPECT_EQ(LetterLabel(27), "AB");

  Analysis kimi = Analyzed(Loaded(KimiFiles()));
  EXPECT_EQ(kimi.configs[0].short_label, "bf16 KV");
  EXPECT_EQ(kimi.configs[1].short_label, "fp8 KV");

  Analysis sweep = Analyzed(Loaded({kData + "/sweep"}));
  ASSERT_EQ(sweep.configs.size(), 2u);
  EXPECT_EQ(sweep.configs[0].short_label, "A");
  EXPECT_EQ(sweep.configs[1].short_label, "B");
  const auto tables = BuildTables(sweep);
  // The legend maps each letter to its full label; other tables and the
  // charts use the letter only.
  ASSERT_EQ(tables[0].id, "deployments");
  EXPECT_EQ(tables[0].columns[0], "label");
  EXPECT_EQ(tables[0].rows[1][0], "B");
  EXPECT_EQ(tables[0].rows[1][1], "glm-5.2-sweep (weights=int4)");
  for (size_t t = 1; t < tables.size(); ++t) {
    for (const auto& row : tables[t].rows) {
      EXPECT_TRUE(row[0] == "A" || row[0] == "B") << tables[t].id << ": " << row[0];
    }
  }
  const std::string html = RenderHtml(sweep, tables);
  EXPECT_NE(Chart(html, "throughput").find("data-series=\"B\""), std::string::npos);
  EXPECT_EQ(Chart(html, "throughput").find("weights=int4"), std::string::npos);
  // A baseline may be named by its letter too.
  ReportOptions by_letter;
  by_letter.baselines = {"B"};
  EXPECT_EQ(Analyzed(Loaded({kData + "/sweep"}), by_letter).baseline_configs, std::vector<int>{1});
}

TEST(ReportSummary, OpensWithWhatChangedAndWhatBinds) {
  Analysis a = Analyzed(Loaded(KimiFiles()));
  const auto lines = SummaryLines(a);
  ASSERT_EQ(lines.size(), 2u);
  // fp8 KV at 64 is the cheapest of the four fixtures ($1.39 /M out tok).
  EXPECT_EQ(lines[1].rfind("Cheapest per output token of all 4 results: fp8 KV at concurrency "
                           "64, $1.39 /M out tok",
                           0),
            0u)
      << lines[1];
  EXPECT_EQ(lines[0].rfind("fp8 KV vs bf16 KV (kv_cache bf16\u2192fp8_e4m3", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("at concurrency 64: "), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(" out tok/s ("), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("; binds "), std::string::npos) << lines[0];
  const std::string html = RenderHtml(a, BuildTables(a));
  const size_t summary = html.find("<section class=\"answer\"");
  ASSERT_NE(summary, std::string::npos);
  EXPECT_LT(summary, html.find("<table"));  // the answer comes before any table
  EXPECT_NE(RenderMarkdown(a, BuildTables(a)).find("## Summary\n\n- **fp8 KV vs bf16 KV"),
            std::string::npos);
}

TEST(ReportSummary, AtMostFiveLinesTheLastCountsTheRest) {
  std::vector<Summary> results;
  for (int i = 0; i < 8; ++i) {
    Summary s = Loaded({kData + "/kimi_fp8_kv_c64.json"})[0];
    s.id = "config-" + std::to_string(i);
    s.output_throughput *= 1 + 0.1 * i;
    results.push_back(std::move(s));
  }
  Analysis a = Analyzed(std::move(results));
  EXPECT_EQ(Comparisons(a).size(), 7u);
  const auto lines = SummaryLines(a);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[4], "+3 more comparisons in the Cost and What binds tables");
  EXPECT_NE(lines[0].find("(same deployment)"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("+10%)"), std::string::npos) << lines[0];
}

TEST(ReportSummary, BriefFormatTakesTheTitleAsLead) {
  ReportOptions o;
  o.title = "Kimi KV fp8 vs bf16";
  auto text = RenderReport(
      Loaded({kData + "/kimi_bf16_kv_c64.json", kData + "/kimi_fp8_kv_c64.json"}), "brief", o);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(text->rfind("Kimi KV fp8 vs bf16 (kv_cache bf16\u2192fp8_e4m3", 0), 0u) << *text;
  EXPECT_EQ(Count(*text, "\n"), 2) << *text;  // lead, then the figures indented
  EXPECT_NE(text->find("\n  "), std::string::npos) << *text;
  EXPECT_EQ(*ChooseFormat("", "summary.txt"), "brief");
}

TEST(ReportSummary, SmallOverheadsAreNotRoundedAway) {
  std::vector<Summary> r =
      Loaded({kData + "/kimi_fp8_kv_c64.json", kData + "/kimi_fp8_kv_c64.json"});
  r[1].id = "verify";
  r[1].deployment["kv_integrity"] = "verify";
  r[1].output_throughput *= 1 - 0.00014;
  r[1].kv_verify_time_share = 0.00012;
  const std::string line = SummaryLines(Analyzed(std::move(r)))[0];
  EXPECT_NE(line.find("(kv_integrity none\u2192verify)"), std::string::npos) << line;
  EXPECT_NE(line.find("out tok/s (\u22120.014%)"), std::string::npos) << line;
  EXPECT_NE(line.find("verify 0.012% of step time"), std::string::npos) << line;
}

// The compared configuration's throughput carries its 80% prediction band,
// read from the summary's output_throughput_lo/_hi; without them the figure
// stands alone.
TEST(ReportSummary, ThroughputCarriesItsEightyPercentBand) {
  auto doc = ReadJsonFile(kData + "/kimi_fp8_kv_c64.json");
  ASSERT_TRUE(doc.ok());
  (*doc)["output_throughput_lo"] = 971.0;
  (*doc)["output_throughput_hi"] = 2069.0;
  auto banded = ParseSummary(*doc, "fp8.json");
  ASSERT_TRUE(banded.ok()) << banded.status().message();
  EXPECT_EQ(banded->throughput_interval.at("output_throughput"), std::make_pair(971.0, 2069.0));
  std::vector<Summary> r = Loaded({kData + "/kimi_bf16_kv_c64.json"});
  r.push_back(*banded);
  const std::string line = SummaryLines(Analyzed(std::move(r)))[0];
  EXPECT_NE(line.find("%; 80% 971..2069)"), std::string::npos) << line;
  const std::string plain = SummaryLines(Analyzed(Loaded(KimiFiles())))[0];
  EXPECT_EQ(plain.find("80%"), std::string::npos) << plain;
}

TEST(ReportHtml, LatencyPercentileChartsWithTheSlo) {
  std::vector<Summary> r = Loaded(KimiFiles());
  r[3].slo_ms["ttft_ms"] = 300;
  r[3].slo_stat["ttft"] = "p90";
  r[3].latency_interval_ms["p90_ttft"] = {800, 1200};
  Analysis a = Analyzed(std::move(r));
  const std::string html = RenderHtml(a, BuildTables(a));
  for (const char* id : {"latency_ttft", "latency_tpot", "latency_itl", "latency_e2el"}) {
    const std::string chart = Chart(html, id);
    ASSERT_FALSE(chart.empty()) << id;
    EXPECT_EQ(Count(chart, "class=\"mark\""), 4 * 3) << id;  // 4 results x p50/p90/p99
    EXPECT_NE(chart.find("data-category=\"fp8 KV@64\""), std::string::npos) << id;
  }
  const std::string ttft = Chart(html, "latency_ttft");
  EXPECT_EQ(Count(ttft, "class=\"slo\""), 1);
  EXPECT_NE(ttft.find("SLO p90 \u2264 300 ms"), std::string::npos);
  // The fixture's goodput SLO (every request's TPOT within 30 ms) names no
  // percentile; ITL has none.
  EXPECT_EQ(Count(Chart(html, "latency_tpot"), "class=\"slo\""), 1);
  EXPECT_NE(Chart(html, "latency_tpot").find("SLO \u2264 30 ms"), std::string::npos);
  EXPECT_EQ(Count(Chart(html, "latency_itl"), "class=\"slo\""), 0);
  // A prediction interval is a whisker on its bar, and only there.
  EXPECT_EQ(Count(ttft, "class=\"interval\""), 1);
  EXPECT_NE(ttft.find("class=\"interval\" data-lo=\"800\" data-hi=\"1200\""), std::string::npos);
  // p99 TTFT of the fp8 c64 fixture, as a bar.
  EXPECT_NE(ttft.find("data-series=\"p99\" data-category=\"fp8 KV@64\""), std::string::npos);
}

TEST(ReportSummaryParse, PredictionIntervalsBesideLatencies) {
  auto doc = ReadJsonFile(kData + "/kimi_fp8_kv_c64.json");
  ASSERT_TRUE(doc.ok());
  (*doc)["p90_ttft_ms_lo"] = 700.0;
  (*doc)["p90_ttft_ms_hi"] = 1100.0;
  (*doc)["median_tpot_ms_lo"] = 18.0;  // no _hi: not an interval
  auto s = ParseSummary(*doc, "x.json");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->latency_interval_ms.size(), 1u);
  EXPECT_EQ(s->latency_interval_ms.at("p90_ttft"), std::make_pair(700.0, 1100.0));
  (*doc)["p90_ttft_ms_lo"] = 1200.0;
  auto bad = ParseSummary(*doc, "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("p90_ttft_ms_lo"), std::string::npos);
}

TEST(ReportHtml, EveryTableScrollsInsideItsOwnBox) {
  Analysis a = Analyzed(Loaded(KimiFiles()));
  const auto tables = BuildTables(a);
  const std::string html = RenderHtml(a, tables);
  EXPECT_EQ(Count(html, "<table"), static_cast<int>(tables.size()));
  EXPECT_EQ(Count(html, "<div class=\"table-wrap\"><table"), static_cast<int>(tables.size()));
  EXPECT_NE(html.find("div.table-wrap { overflow-x: auto; max-width: 100%;"), std::string::npos);
}

TEST(ReportPaths, NoAbsolutePathOfTheMachine) {
  EXPECT_EQ(ScrubAbsolutePaths("/home/u/x/summary.json"), "summary.json");
  EXPECT_EQ(ScrubAbsolutePaths("see (/a/b/c.json): bad"), "see (c.json): bad");
  EXPECT_EQ(ScrubAbsolutePaths("1546 tok/s, 193 /GPU"), "1546 tok/s, 193 /GPU");
  EXPECT_EQ(ScrubAbsolutePaths("calibrate/profiles/h200.json"), "calibrate/profiles/h200.json");
  EXPECT_TRUE(IsAbsolutePath("/x"));
  EXPECT_FALSE(IsAbsolutePath("build/study/x"));

  // The fixtures are loaded by absolute path (the test data directory), one
  // profile path is absolute and a warning names a file.
  std::vector<Summary> r = Loaded(KimiFiles());
  ASSERT_EQ(kData.front(), '/');
  r[0].profile_path = "/opt/somewhere/calibrate/profiles/h200-sxm.json";
  r[1].warnings.push_back("trace /srv/traces/agentic.jsonl: 3 lines skipped");
  Analysis a = Analyzed(std::move(r));
  const auto tables = BuildTables(a);
  for (const std::string& out :
       {RenderHtml(a, tables), RenderMarkdown(a, tables), RenderCsv(a, tables)}) {
    EXPECT_EQ(out.find(kData), std::string::npos);
    EXPECT_EQ(out.find("/opt/somewhere"), std::string::npos);
    EXPECT_EQ(out.find("/srv/traces"), std::string::npos);
  }
  const std::string md = RenderMarkdown(a, tables);
  EXPECT_NE(md.find("trace agentic.jsonl: 3 lines skipped"), std::string::npos);
  // A relative profile path, as the user gave it, stays.
  EXPECT_NE(md.find("h200-sxm (calibrate/profiles/h200-sxm.json)"), std::string::npos);
}

}  // namespace
}  // namespace capplan::report
