// `capplan --version` and the default planning job (`make run`,
// scripts/run_default.sh) as a user sees them.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_util/shell.h"

namespace {

namespace fs = std::filesystem;

struct ShellRun {
  int exit_code = -1;
  std::string out, err;
};

std::string Slurp(const fs::path& p) { return capplan::test_util::ReadText(p.string()); }

std::vector<std::string> SplitLines(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// Display width: UTF-8 continuation bytes (the arrows, the minus) take none.
size_t Width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

class CapplanCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = capplan::test_util::TestTempDir(); }
  ShellRun Shell(const std::string& cmd) {
    const std::string full =
        cmd + " >'" + (dir_ / "stdout").string() + "' 2>'" + (dir_ / "stderr").string() + "'";
    const int st = std::system(full.c_str());
    return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, Slurp(dir_ / "stdout"), Slurp(dir_ / "stderr")};
  }
  fs::path dir_;
};

TEST_F(CapplanCli, VersionNamesTheReleaseAndTheCommit) {
  const ShellRun r = Shell(std::string(CAPPLAN_BIN) + " --version");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            std::string("capplan ") + EXPECTED_VERSION + " (commit " + EXPECTED_COMMIT + ")\n");
  EXPECT_TRUE(std::regex_match(r.out, std::regex("capplan [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit "
                                                 "([0-9a-f]{4,40}|unknown)\\)\n")))
      << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
  // The general help says where the version is.
  EXPECT_NE(Shell(std::string(CAPPLAN_BIN) + " --help").out.find("--version"), std::string::npos);
}

// The whole default job (a few seconds): the terminal gets a short answer
// and where the details are; the detailed tables land in files.
TEST_F(CapplanCli, MakeRunEndsWithAShortSummaryAndWritesTablesToFiles) {
  const fs::path study = dir_ / "study";
  const ShellRun r = Shell("cd '" + std::string(CAPPLAN_SOURCE_DIR) + "' && CAPPLAN_STUDY_DIR='" +
                           study.string() + "' scripts/run_default.sh '" + CAPPLAN_BUILD_DIR + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::vector<std::string> out = SplitLines(r.out);
  const std::vector<std::string> summary = SplitLines(Slurp(study / "summary.txt"));
  ASSERT_FALSE(summary.empty());
  EXPECT_LE(summary.size(), 16u) << Slurp(study / "summary.txt");
  // Terminal: one progress line, the summary, then the lines saying where
  // the reports, the what-if page (when the WebAssembly module was built),
  // the tables and the simulator's warnings (when there are any) are;
  // nothing else, on stderr neither.
  EXPECT_EQ(r.err, "");
  const bool whatif = fs::exists(fs::path(CAPPLAN_BUILD_DIR) / "wasm" / "capplan_sim.js");
  const bool warned = fs::file_size(study / "warnings.txt") > 0;
  const size_t where = (whatif ? 3 : 2) + (warned ? 1 : 0);
  ASSERT_EQ(out.size(), 1 + summary.size() + where) << r.out;
  EXPECT_EQ(std::vector<std::string>(out.begin() + 1, out.end() - where), summary);
  const std::string& reports = out[out.size() - where];
  EXPECT_EQ(reports.rfind("Reports: ", 0), 0u) << r.out;
  EXPECT_NE(reports.find("report.html"), std::string::npos);
  EXPECT_NE(reports.find("slo-report.html"), std::string::npos);
  if (whatif) {
    EXPECT_EQ(out[out.size() - 2 - (warned ? 1 : 0)].rfind("What-if page", 0), 0u) << r.out;
    EXPECT_TRUE(fs::exists(study / "whatif.html"));
  }
  EXPECT_EQ(out[out.size() - 1 - (warned ? 1 : 0)].rfind("Detailed tables: ", 0), 0u) << r.out;
  if (warned) {
    EXPECT_EQ(out.back().rfind("Simulator warnings (", 0), 0u) << r.out;
    EXPECT_NE(out.back().find("warnings.txt"), std::string::npos) << r.out;
  }
  for (const auto& l : out) EXPECT_LE(Width(l), 160u) << l;
  // Each study question answered with figures read from the summaries.
  const std::string text = Slurp(study / "summary.txt");
  for (const char* needle :
       {"Kimi K2.6 KV fp8 vs bf16", "GLM-5.2 decode weights int4 vs fp8",
        "GLM-5.2 prefill weights int4 vs fp8", "Kimi K2.6 KV integrity verify vs none",
        "cheapest PD vs co-located", "KV capacity ", " out tok/s (", " in tok/s (", " /M out tok (",
        "verify ", "binds ", "Energy, decode at c=64 (J/out tok", "Kimi fp8 KV ",
        "host KV tier vs HBM only (KV tiers none→host 200 GiB/GPU)", "prefix cache hit "}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  }
  // The detailed tables are in files, not on the terminal.
  const std::string tables = Slurp(study / "tables.txt");
  EXPECT_NE(tables.find("== KV capacity of the shipped model cards"), std::string::npos);
  EXPECT_NE(tables.find("== (a) Kimi K2.6 decode pool"), std::string::npos);
  EXPECT_NE(tables.find("== Winners at the SLO"), std::string::npos);
  EXPECT_EQ(r.out.find("== (a) Kimi K2.6 decode pool"), std::string::npos);
  for (const char* f : {"report.html", "report.md", "slo-report.html", "slo-report.md"}) {
    EXPECT_TRUE(fs::exists(study / f)) << f;
  }
}

}  // namespace
