// `capplan report` as a user runs it: exit codes and one-line errors.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/test_util/shell.h"

namespace {

namespace fs = std::filesystem;
const std::string kData = REPORT_TEST_DATA;

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

std::string Slurp(const fs::path& p) { return capplan::test_util::ReadText(p.string()); }

class ReportCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = capplan::test_util::TestTempDir(); }
  CliRun Capplan(const std::string& args) {
    const std::string cmd = std::string(CAPPLAN_BIN) + " " + args + " >'" +
                            (dir_ / "stdout").string() + "' 2>'" + (dir_ / "stderr").string() + "'";
    const int st = std::system(cmd.c_str());
    return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, Slurp(dir_ / "stdout"), Slurp(dir_ / "stderr")};
  }
  fs::path dir_;
};

int Lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST_F(ReportCli, WritesHtmlAndSaysWhere) {
  const std::string out = (dir_ / "plan.html").string();
  const CliRun r = Capplan("report " + kData + "/kimi_bf16_kv_c16.json " + kData +
                           "/kimi_fp8_kv_c16.json --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("report: wrote " + out), std::string::npos);
  EXPECT_NE(Slurp(out).find("<svg class=\"chart\" data-chart=\"pareto\""), std::string::npos);
}

TEST_F(ReportCli, MarkdownFromExtensionAndBaselineFlag) {
  const std::string out = (dir_ / "plan.md").string();
  const CliRun r = Capplan("report " + kData + "/kimi_bf16_kv_c16.json " + kData +
                           "/kimi_fp8_kv_c16.json --out " + out + " --baseline 'fp8 KV'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(Slurp(out).find("cost per output token vs fp8 KV"), std::string::npos);
}

TEST_F(ReportCli, BadInputsAreOneLineUsageErrors) {
  const std::string out = (dir_ / "r.html").string();
  struct Case {
    std::string args, needle;
  } cases[] = {
      {"report " + kData + "/missing.json --out " + out, "missing.json: no such file"},
      {"report " + kData + "/not_a_summary.json --out " + out, "not a simulation summary"},
      {"report " + kData + "/sweep --out " + out + " --format htm", "did you mean 'html'"},
      {"report " + kData + "/sweep", "--out FILE is required"},
      {"report " + kData + "/sweep --out " + out + " --baslein x", "did you mean '--baseline'"},
  };
  for (const auto& c : cases) {
    const CliRun r = Capplan(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(Lines(r.err), 1) << r.err;
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
}

TEST_F(ReportCli, RealPdRunAndItsTwinGetTheComparisonTable) {
  // Real `capplan simulate --out` results, so the report reads the summary
  // sim/pd writes today (not only the hand-made fixture).
  const std::string root = CAPPLAN_SOURCE_DIR;
  for (const char* s : {"pd-glm-5.2", "pd-glm-5.2-colocated"}) {
    const CliRun sim = Capplan("simulate " + root + "/scenarios/" + s + ".json --set " +
                               "workload.num_requests=30 --set workload.warmup_requests=3 --out " +
                               (dir_ / s).string());
    ASSERT_EQ(sim.exit_code, 0) << sim.err;
  }
  const std::string out = (dir_ / "pd.md").string();
  const CliRun r = Capplan("report " + (dir_ / "pd-glm-5.2-colocated").string() + " " +
                           (dir_ / "pd-glm-5.2").string() + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = Slurp(out);
  EXPECT_NE(md.find("## PD vs co-located twin"), std::string::npos) << md;
  // The twin's name is too long for a table column: letters, and a legend.
  EXPECT_NE(md.find("| A | pd-glm-5.2-colocated |"), std::string::npos) << md;
  EXPECT_NE(md.find("| B | pd-glm-5.2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| B | PD 1P:1D | 16 | 8P+8D |"), std::string::npos) << md;
  EXPECT_NE(md.find("| B | PD vs twin | 0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("- **pd-glm-5.2 [B] vs pd-glm-5.2-colocated [A] (replicas 2\u21921P:1D"),
            std::string::npos)
      << md;
  // Real summaries name their profile by absolute path, and the results
  // were passed by absolute path: neither reaches the report.
  ASSERT_EQ(dir_.string().front(), '/');
  const std::string html_out = (dir_ / "pd.html").string();
  ASSERT_EQ(Capplan("report " + (dir_ / "pd-glm-5.2-colocated").string() + " " +
                    (dir_ / "pd-glm-5.2").string() + " --out " + html_out)
                .exit_code,
            0);
  for (const std::string& text : {md, Slurp(html_out)}) {
    EXPECT_EQ(text.find(dir_.string()), std::string::npos);
    EXPECT_EQ(text.find(root), std::string::npos);
  }

  // The brief format to stdout: the lead, then the figures indented.
  const CliRun brief = Capplan("report " + (dir_ / "pd-glm-5.2-colocated").string() + " " +
                               (dir_ / "pd-glm-5.2").string() +
                               " --format brief --out - --title 'GLM-5.2 PD vs co-located'");
  ASSERT_EQ(brief.exit_code, 0) << brief.err;
  EXPECT_EQ(brief.out.rfind("GLM-5.2 PD vs co-located (replicas 2\u21921P:1D", 0), 0u) << brief.out;
  EXPECT_EQ(Lines(brief.out), 2) << brief.out;
  EXPECT_NE(brief.out.find(" out tok/s ("), std::string::npos) << brief.out;
}

// The study's detailed tables (scripts/run_default.sh) print `simulate
// --row` lines: a prefill pool's row counts input tokens and says so, a
// decode row output tokens.
TEST_F(ReportCli, RowsLabelTheTokensTheyCount) {
  const std::string src = CAPPLAN_SOURCE_DIR;
  const CliRun pre = Capplan("simulate " + src + "/scenarios/glm-5.2-prefill-fp8.json " +
                             "--set workload.num_requests=20 --set workload.warmup_requests=4 --row");
  ASSERT_EQ(pre.exit_code, 0) << pre.err;
  EXPECT_EQ(pre.out.find(" out "), std::string::npos) << pre.out;
  EXPECT_NE(pre.out.find(" | in "), std::string::npos) << pre.out;
  EXPECT_NE(pre.out.find(" /M tok"), std::string::npos) << pre.out;
  // Thousands of input tokens per second, not the one output token each.
  const double in = std::stod(pre.out.substr(pre.out.find(" | in ") + 6));
  EXPECT_GT(in, 1000) << pre.out;
  const CliRun dec = Capplan("simulate " + src + "/scenarios/glm-5.2-decode-fp8.json " +
                             "--set workload.concurrency=4 --set workload.num_requests=12 "
                             "--set workload.warmup_requests=4 --row");
  ASSERT_EQ(dec.exit_code, 0) << dec.err;
  EXPECT_NE(dec.out.find(" | out "), std::string::npos) << dec.out;
  EXPECT_NE(dec.out.find(" /M out"), std::string::npos) << dec.out;
}

}  // namespace
