// `capplan engine ...` as a user runs it.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

struct Out {
  int rc;
  std::string text;
};

Out RunCapplan(const std::string& args) {
  const std::string cmd = std::string(CAPPLAN_BIN) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string text;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) text.append(buf, n);
  const int st = pclose(p);
  return {WEXITSTATUS(st), text};
}

TEST(EngineCliTest, IntegritySelftestJson) {
  const Out o = RunCapplan("engine integrity-selftest --faults 1 --json");
  ASSERT_EQ(o.rc, 0) << o.text;
  const auto j = nlohmann::json::parse(o.text);
  EXPECT_EQ(j["injected"], 3);
  EXPECT_EQ(j["detected"], 3);
  EXPECT_EQ(j["false_positives"], 0);
  EXPECT_EQ(j["unaffected_ok"], j["unaffected_total"]);
}

TEST(EngineCliTest, UsageErrorsExitTwoWithAHint) {
  Out o = RunCapplan("engine serve-bench --scenario x.json");
  EXPECT_EQ(o.rc, 2) << o.text;
  EXPECT_NE(o.text.find("--out FILE.json is required"), std::string::npos) << o.text;
  o = RunCapplan("engine integrity-selftest --falts 2");
  EXPECT_EQ(o.rc, 2) << o.text;
  EXPECT_NE(o.text.find("did you mean '--faults'"), std::string::npos) << o.text;
  o = RunCapplan("engine serve-bnch");
  EXPECT_EQ(o.rc, 2) << o.text;
  EXPECT_NE(o.text.find("did you mean 'serve-bench'"), std::string::npos) << o.text;
}

}  // namespace
