// The what-if page's presets (report/interactive.cc): each result's preset
// carries the settings it ran with, run length included, and results that
// share a name are labelled by what differs. The page's behaviour in a
// browser is tests/wasm/whatif_browser_test.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "report/interactive.h"
#include "tests/report/report_test_data.h"
#include "tests/test_util/temp_dir.h"

namespace capplan::report {
namespace {

// The JSON inside <script type="application/json" id="ID">.
nlohmann::json PageData(const std::string& page, const std::string& id) {
  const std::string open = "id=\"" + id + "\">";
  const size_t a = page.find(open);
  if (a == std::string::npos) return nullptr;
  const size_t b = page.find("</script>", a);
  return nlohmann::json::parse(page.substr(a + open.size(), b - a - open.size()), nullptr, false);
}

class InteractivePage : public ::testing::Test {
 protected:
  void SetUp() override {
    module_ = (std::filesystem::path(test_util::TestTempDir()) / "capplan_sim.js").string();
    std::ofstream(module_) << "var CapplanSim = () => Promise.reject('not the module');\n";
  }
  std::string Render(std::vector<Summary> results) {
    InteractiveOptions o;
    o.module_js = module_;
    auto page = RenderInteractive(results, o);
    EXPECT_TRUE(page.ok()) << page.status().message();
    return page.ok() ? *page : "";
  }
  std::string module_;
};

TEST_F(InteractivePage, PresetsKeepTheRunLengthAndAreToldApart) {
  std::vector<Summary> results =
      test_data::Loaded({test_data::kData + "/kimi_bf16_kv_c16.json",
                         test_data::kData + "/kimi_bf16_kv_c64.json",
                         test_data::kData + "/kimi_fp8_kv_c64.json"});
  const int conc[] = {16, 64, 64};
  for (size_t i = 0; i < results.size(); ++i) {
    results[i].scenario = "kimi-k2.6-kv-bf16";  // a shipped scenario file
    results[i].workload = {{"kind", "closed_loop"}, {"concurrency", conc[i]},
                           {"num_requests", 41 * conc[i]}, {"warmup_requests", conc[i]}};
  }
  results[2].id = "other";
  results[2].workload["kind"] = "sessions";
  const nlohmann::json presets = PageData(Render(results), "capplan-presets");
  ASSERT_TRUE(presets.is_array() && presets.size() == 3) << presets.dump();
  // The two bf16 results share a name and differ in load and run length.
  EXPECT_EQ(presets[0]["label"], "bf16 KV (concurrency 16, num_requests 656, warmup_requests 16)");
  EXPECT_EQ(presets[1]["label"],
            "bf16 KV (concurrency 64, num_requests 2624, warmup_requests 64)");
  EXPECT_EQ(presets[2]["label"], "other");
  EXPECT_EQ(presets[0]["values"]["workload.num_requests"], 656);
  EXPECT_EQ(presets[0]["values"]["workload.warmup_requests"], 16);
  EXPECT_EQ(presets[0]["values"]["workload.concurrency"], 16);
  // Sessions derive their count from the sessions: not pinned.
  EXPECT_FALSE(presets[2]["values"].contains("workload.num_requests")) << presets[2].dump();
}

TEST_F(InteractivePage, TheSameResultTwiceIsNumbered) {
  std::vector<Summary> results = test_data::Loaded(
      {test_data::kData + "/kimi_bf16_kv_c16.json", test_data::kData + "/kimi_bf16_kv_c16.json"});
  for (Summary& r : results) r.scenario = "kimi-k2.6-kv-bf16";
  const nlohmann::json presets = PageData(Render(results), "capplan-presets");
  ASSERT_EQ(presets.size(), 2u);
  EXPECT_EQ(presets[0]["label"], "bf16 KV (#1)");
  EXPECT_EQ(presets[1]["label"], "bf16 KV (#2)");
}

// The pickers' fallback lists are the format table's own: every weight
// choice (int4 included) for weights, the KV formats for KV, kept apart.
TEST_F(InteractivePage, FormatListsComeFromTheFormatTable) {
  InteractiveOptions o;
  o.module_js = module_;
  o.scenario_files = {std::string(CAPPLAN_SOURCE_DIR) + "/scenarios/glm-5.2-decode-fp8.json"};
  auto page = RenderInteractive({}, o);
  ASSERT_TRUE(page.ok()) << page.status().message();
  const nlohmann::json opts = PageData(*page, "capplan-options");
  std::ifstream in(std::string(CAPPLAN_SOURCE_DIR) + "/hw/formats.json");
  const nlohmann::json formats = nlohmann::json::parse(in);
  EXPECT_EQ(opts["weights"], formats["weight_choices"]["names"]);
  EXPECT_EQ(opts["kv_cache"], formats["kv_cache"]["names"]);
  const auto& w = opts["weights"];
  EXPECT_NE(std::find(w.begin(), w.end(), "int4"), w.end());
  EXPECT_EQ(std::find(w.begin(), w.end(), "fp8_per_token_head"), w.end());
}

}  // namespace
}  // namespace capplan::report
