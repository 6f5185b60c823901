// Looks at the HTML report as a person would: Debian's Chromium renders it
// headless, takes a screenshot, and the page's own inline self-check (see
// report/format_html.cc) records what was drawn. What is checked:
//   * every chart (memory, throughput, pareto) has data marks with a
//     non-empty rendered bounding box;
//   * the page is no wider than the window (document scrollWidth <=
//     clientWidth, and no chart, table, heading or paragraph extends past
//     the right edge), at a desktop and at a narrow width;
//   * the console shows no errors: Chromium's --enable-logging=stderr lines
//     for console messages must be only the self-check's own line (its
//     presence proves console capture works) and no "Uncaught" error;
//   * the latency percentile charts draw a bar per result and percentile;
//   * the screenshot is a PNG of the requested width; it is kept in the
//     build folder (tests/report/report-1280.png, report-640.png) for a
//     person to look at.
// A negative control injects an overflowing element and a script error and
// expects both to be caught, so the checks can fail.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "report/report.h"
#include "tests/test_util/temp_dir.h"

namespace capplan::report {
namespace {

namespace fs = std::filesystem;
const std::string kData = REPORT_TEST_DATA;
const fs::path kShots = REPORT_SCREENSHOT_DIR;

std::string FindChromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (fs::exists(p)) return p;
  }
  return "";
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct BrowserRun {
  int exit_code = -1;
  std::string stdout_text, stderr_text;
};

// Fresh profile per run; the network flags keep Chromium from dialling out
// (connections are refused on a closed network and would log errors).
BrowserRun Chromium(const fs::path& work, const std::string& mode, const fs::path& page, int width,
                    int height) {
  static int n = 0;
  const fs::path profile = work / ("profile" + std::to_string(++n));
  const fs::path out = work / ("out" + std::to_string(n));
  const fs::path err = work / ("err" + std::to_string(n));
  const std::string cmd =
      "cd '" + work.string() + "' && timeout 90 " + FindChromium() +
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
      " --disable-background-networking --disable-component-update --disable-sync"
      " --disable-dev-shm-usage --hide-scrollbars --enable-logging=stderr --v=0"
      " --user-data-dir='" +
      profile.string() + "' --window-size=" + std::to_string(width) + "," + std::to_string(height) +
      " " + mode + " 'file://" + page.string() + "' >'" + out.string() + "' 2>'" + err.string() +
      "'";
  BrowserRun r;
  const int st = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.stdout_text = Slurp(out);
  r.stderr_text = Slurp(err);
  return r;
}

std::string Unescape(std::string s) {
  const std::pair<const char*, const char*> ents[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}};
  for (const auto& [from, to] : ents) {
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + 1)) {
      s.replace(p, std::string(from).size(), to);
    }
  }
  return s;
}

// The self-check object written into <pre id="capplan-selfcheck">.
nlohmann::json SelfCheck(const std::string& dom) {
  const std::string open = "id=\"capplan-selfcheck\">";
  const size_t a = dom.find(open);
  if (a == std::string::npos) return nullptr;
  const size_t b = dom.find("</pre>", a);
  return nlohmann::json::parse(Unescape(dom.substr(a + open.size(), b - a - open.size())), nullptr,
                               false);
}

// Console lines Chromium logged, e.g.
// [..:INFO:CONSOLE(53)] "capplan-selfcheck {...}", source: file:///... (53)
std::vector<std::string> ConsoleLines(const std::string& log) {
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find(":CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos) {
      lines.push_back(line);
    }
  }
  return lines;
}

class ReportBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    if (FindChromium().empty()) {
      GTEST_SKIP() << "chromium not installed (make test installs it: scripts/install_deps.sh "
                      "test); skipping the rendered-report check";
    }
    work_ = test_util::TestTempDir();
    page_ = work_ / "report.html";
    Status st = WriteReport(
        {kData + "/kimi_bf16_kv_c16.json", kData + "/kimi_bf16_kv_c64.json",
         kData + "/kimi_fp8_kv_c16.json", kData + "/kimi_fp8_kv_c64.json", kData + "/sweep"},
        page_.string(), "html", {});
    ASSERT_TRUE(st.ok()) << st.message();
  }
  fs::path work_, page_;
};

void ExpectCleanPage(const BrowserRun& run, int width) {
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const nlohmann::json check = SelfCheck(run.stdout_text);
  ASSERT_TRUE(check.is_object()) << "self-check missing from the DOM:\n"
                                 << run.stdout_text.substr(0, 2000);
  // 4 Kimi results + 4 sweep points; 4 configurations x 6 memory segments.
  EXPECT_EQ(check["charts"]["throughput"], 8) << check.dump();
  EXPECT_EQ(check["charts"]["pareto"], 8) << check.dump();
  EXPECT_EQ(check["charts"]["memory"], 24) << check.dump();
  for (const char* m : {"latency_ttft", "latency_tpot", "latency_itl", "latency_e2el"}) {
    EXPECT_EQ(check["charts"][m], 8 * 3) << m << ": " << check.dump();  // p50, p90, p99
  }
  EXPECT_LE(check["scroll_width"].get<int>(), check["client_width"].get<int>())
      << "page overflows at width " << width << ": " << check.dump();
  EXPECT_TRUE(check["overflowing"].empty()) << "at width " << width << ": " << check.dump();
  // At desktop width every table fits without its own scroll bar; narrower,
  // a table may scroll inside its box (never the page).
  if (width >= 1280) {
    EXPECT_TRUE(check["scrolling_tables"].empty()) << check.dump();
  }
  EXPECT_TRUE(check["errors"].empty()) << check.dump();
  EXPECT_GE(check["tables"].get<int>(), 6);
  const auto lines = ConsoleLines(run.stderr_text);
  bool saw_selfcheck = false;
  for (const auto& l : lines) {
    if (l.find("capplan-selfcheck") != std::string::npos) {
      saw_selfcheck = true;
    } else {
      ADD_FAILURE() << "console message: " << l;
    }
  }
  EXPECT_TRUE(saw_selfcheck) << "console capture did not work; stderr:\n" << run.stderr_text;
}

TEST_F(ReportBrowser, ChartsDrawnNoOverflowNoConsoleErrors) {
  ExpectCleanPage(Chromium(work_, "--dump-dom", page_, 1280, 900), 1280);
  ExpectCleanPage(Chromium(work_, "--dump-dom", page_, 640, 900), 640);
}

TEST_F(ReportBrowser, ScreenshotIsAPngOfTheWindow) {
  fs::create_directories(kShots);
  for (const int width : {1280, 640}) {
    const fs::path shot = kShots / ("report-" + std::to_string(width) + ".png");
    fs::remove(shot);
    const BrowserRun run = Chromium(work_, "--screenshot=" + shot.string(), page_, width, 4200);
    ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
    const std::string png = Slurp(shot);
    ASSERT_GT(png.size(), 24u) << "no screenshot written: " << run.stderr_text;
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    auto be32 = [&](size_t off) {
      return (static_cast<unsigned char>(png[off]) << 24) |
             (static_cast<unsigned char>(png[off + 1]) << 16) |
             (static_cast<unsigned char>(png[off + 2]) << 8) |
             static_cast<unsigned char>(png[off + 3]);
    };
    EXPECT_EQ(be32(16), static_cast<unsigned>(width));  // IHDR width
    // A blank page compresses to a few kB; charts and tables do not.
    EXPECT_GT(png.size(), 30000u);
  }
}

// Thirteen configurations (more than the palette's ten colours) sharing
// warnings: in the rendered page every configuration keeps its own colour
// and marker in each chart, the warnings are one section listing each text
// once with its count, and every table column has a header.
TEST_F(ReportBrowser, ConfigurationsDistinctWarningsOnceColumnsLabelled) {
  const nlohmann::json base = nlohmann::json::parse(Slurp(kData + "/kimi_bf16_kv_c16.json"));
  std::vector<std::string> inputs;
  for (int i = 0; i < 13; ++i) {
    nlohmann::json r = base;
    r["scenario"] = "config-" + std::to_string(i);
    r["label"] = "config " + std::to_string(i);
    r["warnings"] = {"op 'moe.gate' outside the fitted range", "kernel table cross-version"};
    if (i % 2 == 0) r["warnings"].push_back("KV pool full");
    const fs::path f = work_ / ("config-" + std::to_string(i) + ".json");
    std::ofstream(f) << r.dump();
    inputs.push_back(f.string());
  }
  const fs::path page = work_ / "many.html";
  const Status st = WriteReport(inputs, page.string(), "html", {});
  ASSERT_TRUE(st.ok()) << st.message();
  const BrowserRun run = Chromium(work_, "--dump-dom", page, 1280, 900);
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const nlohmann::json check = SelfCheck(run.stdout_text);
  ASSERT_TRUE(check.is_object()) << run.stdout_text.substr(0, 2000);
  ASSERT_FALSE(check["series_styles"].empty()) << check.dump();
  for (const auto& [chart, styles] : check["series_styles"].items()) {
    std::set<std::string> distinct;
    for (const auto& [series, style] : styles.items()) distinct.insert(style.get<std::string>());
    EXPECT_EQ(styles.size(), 13u) << chart << ": " << styles.dump();
    EXPECT_EQ(distinct.size(), styles.size()) << chart << " reuses a style: " << styles.dump();
  }
  EXPECT_EQ(check["warnings"]["sections"], 1) << check.dump();
  EXPECT_EQ(check["warnings"]["tables"], 1) << check.dump();
  EXPECT_EQ(check["warnings"]["rows"], 3) << check.dump();
  EXPECT_EQ(check["warnings"]["repeated"], 0) << check.dump();
  EXPECT_EQ(check["warnings"]["columns"],
            nlohmann::json::array({"warning", "results", "seen_in"}));
  EXPECT_TRUE(check["unlabelled_columns"].empty()) << check.dump();
  EXPECT_NE(run.stdout_text.find("<td class=\"num\">13</td>"), std::string::npos);
  EXPECT_NE(run.stdout_text.find("<td class=\"num\">7</td>"), std::string::npos);
}

TEST_F(ReportBrowser, NegativeControlCatchesOverflowAndScriptErrors) {
  std::string html = Slurp(page_);
  const size_t body = html.find("<body>") + 6;
  html.insert(body,
              "<div style=\"width:3000px\">too wide</div>"
              "<script>window.capplanNoSuchFunction();</script>");
  const fs::path bad = work_ / "bad.html";
  std::ofstream(bad) << html;
  const BrowserRun run = Chromium(work_, "--dump-dom", bad, 1024, 900);
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const nlohmann::json check = SelfCheck(run.stdout_text);
  ASSERT_TRUE(check.is_object());
  EXPECT_GT(check["scroll_width"].get<int>(), check["client_width"].get<int>());
  bool uncaught = false;
  for (const auto& l : ConsoleLines(run.stderr_text)) {
    if (l.find("Uncaught") != std::string::npos) uncaught = true;
  }
  EXPECT_TRUE(uncaught) << run.stderr_text;
}

}  // namespace
}  // namespace capplan::report
