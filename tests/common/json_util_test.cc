#include "common/json_util.h"

#include <gtest/gtest.h>

namespace capplan {
namespace {

TEST(JsonUtil, MalformedJsonNamesFileLineColumn) {
  auto r = ParseJson("{\n  \"a\": 1,\n  \"b\": }\n", "s.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ExitCode(), 2);
  EXPECT_NE(r.status().message().find("s.json: line 3"), std::string::npos)
      << r.status().message();
}

TEST(JsonUtil, UnknownKeyGetsDidYouMean) {
  auto doc = nlohmann::json::parse(R"({"tp": 8, "concurency": 4})");
  JsonObject o(doc, "s.json", "/deployment");
  int tp = 0, c = 0;
  ASSERT_TRUE(o.Get("tp", &tp).ok());
  ASSERT_TRUE(o.Get("concurrency", &c).ok());
  EXPECT_EQ(tp, 8);
  Status s = o.Finish();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "s.json: /deployment/concurency: unknown field; did you mean 'concurrency'?");
}

TEST(JsonUtil, TypeAndRangeErrorsNamePath) {
  auto doc = nlohmann::json::parse(R"({"tp": "eight", "rate": -1.5})");
  JsonObject o(doc, "s.json", "");
  int tp = 0;
  Status s = o.Get("tp", &tp);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("s.json: /tp: must be an integer"), std::string::npos);
  double rate = 0;
  ASSERT_TRUE(o.Get("rate", &rate).ok());
  EXPECT_FALSE(o.CheckRange("rate", rate, 0, 1e6).ok());
}

TEST(JsonUtil, RequiredMissing) {
  auto doc = nlohmann::json::parse("{}");
  JsonObject o(doc, "s.json", "");
  std::string model;
  Status s = o.Get("model", &model, true);
  EXPECT_EQ(s.message(), "s.json: /model: required field is missing");
}

TEST(JsonUtil, SetDottedParsesValues) {
  nlohmann::json doc = nlohmann::json::parse(R"({"deployment": {"tp": 8}})");
  ASSERT_TRUE(SetDotted(&doc, "deployment.tp", "4", "--set").ok());
  ASSERT_TRUE(SetDotted(&doc, "deployment.kv_cache", "fp8", "--set").ok());
  ASSERT_TRUE(SetDotted(&doc, "workload.concurrency", "64", "--set").ok());
  EXPECT_EQ(doc["deployment"]["tp"], 4);
  EXPECT_EQ(doc["deployment"]["kv_cache"], "fp8");
  EXPECT_EQ(doc["workload"]["concurrency"], 64);
  EXPECT_FALSE(SetDotted(&doc, "deployment.tp.x", "1", "--set").ok());
}

}  // namespace
}  // namespace capplan
