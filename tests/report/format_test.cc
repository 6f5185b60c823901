#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "report/formats.h"
#include "report/report.h"
#include "report/text_util.h"
#include "tests/report/report_test_data.h"
#include "tests/test_util/temp_dir.h"

namespace capplan::report {
namespace {

using test_data::Count;
using test_data::kData;

Analysis KimiAnalysis() { return test_data::Analyzed(test_data::Loaded(test_data::KimiFiles())); }

// A warning several results carry is one row with its count and where it
// was seen; a result repeating a warning counts once.
TEST(ReportFormats, WarningsAppearOnceWithTheirCount) {
  std::vector<Summary> results = test_data::Loaded(test_data::KimiFiles());
  for (Summary& r : results) r.warnings = {"op 'x' outside the fitted range"};
  results[0].warnings.push_back("op 'x' outside the fitted range");
  results[3].warnings.push_back("KV pool full");
  Analysis a = test_data::Analyzed(std::move(results));
  const auto tables = BuildTables(a);
  const Table* warn = nullptr;
  for (const auto& t : tables) {
    if (t.id == "warnings") warn = &t;
  }
  ASSERT_NE(warn, nullptr);
  EXPECT_EQ(warn->columns, (std::vector<std::string>{"warning", "results", "seen_in"}));
  ASSERT_EQ(warn->rows.size(), 2u);
  EXPECT_EQ(warn->rows[0][0], "op 'x' outside the fitted range");
  EXPECT_EQ(warn->rows[0][1], "4");
  EXPECT_EQ(Count(warn->rows[0][2], ", "), 3) << warn->rows[0][2];
  EXPECT_EQ(warn->rows[1][1], "1");
  const std::string html = RenderHtml(a, tables);
  EXPECT_EQ(Count(html, "op &#39;x&#39; outside the fitted range"), 1);
  EXPECT_EQ(Count(html, "id=\"warnings\""), 1);
}

TEST(ReportFormats, EveryFormatCarriesEveryCell) {
  Analysis a = KimiAnalysis();
  const auto tables = BuildTables(a);
  std::vector<std::string> ids;
  for (const auto& t : tables) ids.push_back(t.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"deployments", "memory", "throughput", "latency",
                                           "cost", "binding", "warnings"}));
  const std::string html = RenderHtml(a, tables);
  const std::string md = RenderMarkdown(a, tables);
  const std::string csv = RenderCsv(a, tables);
  size_t cells = 0;
  for (const auto& t : tables) {
    for (const auto& row : t.rows) {
      ASSERT_EQ(row.size(), t.columns.size()) << t.id;
      for (const auto& cell : row) {
        ++cells;
        EXPECT_NE(html.find(">" + HtmlEscape(cell) + "</td>"), std::string::npos) << cell;
        EXPECT_NE(md.find("| " + MarkdownCell(cell) + " |"), std::string::npos) << cell;
        EXPECT_NE(csv.find("," + CsvField(cell) + "\n"), std::string::npos) << cell;
      }
    }
  }
  EXPECT_EQ(static_cast<size_t>(Count(csv, "\n")), cells + 1);  // + header
  EXPECT_EQ(csv.rfind("table,row,column,value\n", 0), 0u);
}

// A result that caches prefixes and speculates gets a row in the
// cache/speculation table, with its baseline beside it ("off"); a report
// without either has no such table (the test above).
TEST(ReportFormats, CacheAndSpeculationTableListsTheLeversAndTheirBaseline) {
  namespace fs = std::filesystem;
  const fs::path dir = test_util::TestTempDir();
  std::ifstream in(kData + "/kimi_fp8_kv_c64.json");
  nlohmann::json base = nlohmann::json::parse(in);
  nlohmann::json spec = base;
  spec["scenario"] = "kimi-spec";
  spec["deployment"]["speculative"] = {{"method", "eagle"}, {"draft_tokens", 3}};
  spec["prefix_cache_hit_rate"] = 0.9;
  spec["accept_length_mean"] = 2.61;
  std::ofstream(dir / "base.json") << base.dump();
  std::ofstream(dir / "spec.json") << spec.dump();
  auto r = LoadResults({(dir / "base.json").string(), (dir / "spec.json").string()});
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto a = Analyze(std::move(r).value(), {});
  ASSERT_TRUE(a.ok()) << a.status().message();
  const auto tables = BuildTables(*a);
  const Table* t = nullptr;
  for (const auto& x : tables) {
    if (x.id == "cache_and_speculation") t = &x;
  }
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(t->rows[0][2], "off");
  EXPECT_EQ(t->rows[0][3], "off");
  EXPECT_EQ(t->rows[1][2], "0.9");
  EXPECT_EQ(t->rows[1][3], "2.61");
  EXPECT_NE(RenderHtml(*a, tables).find("id=\"cache_and_speculation\""), std::string::npos);
}

TEST(ReportFormats, TablesShowCostRatioAndWhichTokensAreCounted) {
  Analysis a = KimiAnalysis();
  const std::string md = RenderMarkdown(a, BuildTables(a));
  EXPECT_NE(md.find("\u22129.1% cost per output token vs bf16 KV"), std::string::npos) << md;
  EXPECT_NE(md.find("Output tok/s counts generated tokens only"), std::string::npos);
  EXPECT_NE(md.find("1000 / median TPOT"), std::string::npos);
  EXPECT_NE(md.find("| kv_capacity_tokens |"), std::string::npos);
  EXPECT_NE(md.find("| 640368 |"), std::string::npos);  // 45e9 B / 70272 B per token
  EXPECT_NE(md.find("fixture: datasheet-derived profile"), std::string::npos);  // provenance
}

TEST(ReportFormats, HtmlIsSelfContainedWithThreeCharts) {
  Analysis a = KimiAnalysis();
  const std::string html = RenderHtml(a, BuildTables(a));
  // No network: the only URL is the SVG namespace name, which is never fetched.
  std::string stripped = std::regex_replace(html, std::regex("http://www.w3.org/2000/svg"), "");
  EXPECT_EQ(stripped.find("http://"), std::string::npos);
  EXPECT_EQ(stripped.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_NE(html.find("@media print"), std::string::npos);
  // One mark per datum: 4 results on each XY chart, 2 configs x 5 segments.
  auto marks_in = [&](const std::string& id) {
    const size_t start = html.find("data-chart=\"" + id + "\"");
    EXPECT_NE(start, std::string::npos) << id;
    const size_t end = html.find("</svg>", start);
    return Count(html.substr(start, end - start), "class=\"mark\"");
  };
  EXPECT_EQ(marks_in("memory"), 2 * 6);  // attention, experts, other, reserve, KV pool, free
  EXPECT_EQ(marks_in("throughput"), 4);
  EXPECT_EQ(marks_in("pareto"), 4);
  EXPECT_NE(html.find("class=\"front\""), std::string::npos);
}

TEST(ReportFormats, FormatFromFlagOrExtension) {
  EXPECT_EQ(*ChooseFormat("", "out/r.md"), "md");
  EXPECT_EQ(*ChooseFormat("", "r.csv"), "csv");
  EXPECT_EQ(*ChooseFormat("", "r.html"), "html");
  EXPECT_EQ(*ChooseFormat("csv", "r.html"), "csv");
  auto bad = ChooseFormat("htm", "r.html");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().ExitCode(), 2);
  EXPECT_EQ(bad.status().message(),
            "report: --format: unknown report format 'htm'; did you mean 'html'?");
}

TEST(ReportFormats, WriteReportWritesOneFileAtomically) {
  const std::filesystem::path dir = test_util::TestTempDir();
  const std::string out = (dir / "sub" / "plan.md").string();
  Status st = WriteReport({kData + "/sweep"}, out, "", {});
  ASSERT_TRUE(st.ok()) << st.message();
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "sub")) {
    ++files;
    EXPECT_EQ(e.path().filename(), "plan.md");
  }
  EXPECT_EQ(files, 1);
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find("glm-5.2-sweep (weights=int4)"), std::string::npos);
  // A failing input leaves no file behind.
  const std::string out2 = (dir / "bad.md").string();
  EXPECT_FALSE(WriteReport({kData + "/bad_type.json"}, out2, "", {}).ok());
  EXPECT_FALSE(std::filesystem::exists(out2));
}

TEST(ReportText, Formatting) {
  EXPECT_EQ(FormatNumber(1234.6), "1235");
  EXPECT_EQ(FormatNumber(0.012345), "0.0123");
  EXPECT_EQ(FormatNumber(12.5), "12.5");
  EXPECT_EQ(FormatNumber(2.0), "2");
  EXPECT_EQ(FormatPercent(0.713), "71%");
  EXPECT_EQ(FormatPercent(0.045), "4.5%");
  EXPECT_EQ(FormatChange(0.25), "+25%");
  // Against a zero baseline (a run with no cost) the change is infinite.
  EXPECT_EQ(FormatChange(std::numeric_limits<double>::infinity()), "n/a");
  EXPECT_EQ(FormatPercent(-std::numeric_limits<double>::infinity()), "n/a");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(HtmlEscape("<a&b>"), "&lt;a&amp;b&gt;");
  EXPECT_EQ(MarkdownCell("a|b"), "a\\|b");
}

}  // namespace
}  // namespace capplan::report
