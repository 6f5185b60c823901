// Bad workload input: each error names the file and JSON path and says the fix.
#include <gtest/gtest.h>

#include "tests/sim/workload/workload_test_util.h"
#include "tests/test_util/temp_dir.h"

namespace capplan::sim {
namespace {

constexpr char kLengths[] =
    R"("input_tokens": {"dist": "fixed", "value": 8}, "output_tokens": {"dist": "fixed", "value": 2})";

struct Case {
  std::string json;
  std::string want;
  StatusCode code = StatusCode::kUsage;
};

std::string Open(const std::string& extra) {
  return std::string(R"({"kind": "open_loop", "num_requests": 10, )") + kLengths + ", " + extra +
         "}";
}

TEST(WorkloadErrorsTest, EachNamesFileAndPath) {
  const Case cases[] = {
      {R"({"kind": "closed_lop"})",
       "scenario.json: /workload/kind: unknown workload kind "
       "'closed_lop'; did you mean 'closed_loop'"},
      {R"({"concurrency": 4})", "scenario.json: /workload/kind: required field is missing"},
      {std::string(R"({"kind": "closed_loop", "concurrency": 4, "num_requests": 10, )") +
           R"("input_tokens": {"dist": "gaussian", "mean": 5, "std": 1}, )"
           R"("output_tokens": {"dist": "fixed", "value": 2}})",
       "scenario.json: /workload/input_tokens/dist: unknown length distribution 'gaussian'"},
      {std::string(R"({"kind": "closed_loop", "num_requests": 10, )") + kLengths + "}",
       "/workload/concurrency: required field is missing"},
      {std::string(R"({"kind": "closed_loop", "concurrency": 4, "num_requests": 10, )") + kLengths +
           R"(, "concurency": 5})",
       "/workload/concurency: unknown field; did you mean 'concurrency'"},
      {std::string(R"({"kind": "closed_loop", "concurrency": 4, "num_requests": 10, )") + kLengths +
           R"(, "warmup_requests": 10})",
       "/workload/warmup_requests: must be less than the number of requests (10), got 10"},
      {std::string(R"({"kind": "closed_loop", "concurrency": 4, "num_requests": 10, )") +
           R"("output_tokens": {"dist": "fixed", "value": 2}})",
       "/workload/input_tokens: required object is missing"},
      {Open(R"("request_rate": -2)"), "/workload/request_rate: must be > 0 req/s"},
      {Open(R"("request_rate": 0)"), "/workload/request_rate: must be > 0 req/s"},
      {Open(R"("request_rate": "fast")"), "/workload/request_rate: must be a number of req/s"},
      {Open(R"("burstiness": 1)"), "/workload/request_rate: required field is missing"},
      {Open(R"("request_rate": 5, "burstiness": 0)"), "/workload/burstiness: must be > 0"},
      {Open(R"("request_rate": 5, "burstiness": -1)"), "/workload/burstiness: must be > 0"},
      {Open(R"("request_rate": 5, "burstiness": "high")"),
       "/workload/burstiness: must be a number or \"inf\""},
      {Open(R"("request_rate": 5, "arrival_convention": "vllmm")"),
       "/workload/arrival_convention: unknown value 'vllmm'; did you mean 'vllm'"},
      {Open(R"("request_rate": 5, "max_concurrency": 0)"), "/workload/max_concurrency: must be in"},
      {Open(R"("request_rate": 5, "seed": -1)"), "/workload/seed: must be >= 0"},
      {R"({"kind": "trace", "format": "azure", "path": "x.csv"})",
       "/workload/format: unknown value 'azure'"},
      {R"({"kind": "trace", "format": "mooncake", "path": "traces/nope.jsonl"})",
       "scenario.json: /workload/path: SCENARIOS/traces/nope.jsonl: cannot open file",
       StatusCode::kNotFound},
      {R"({"kind": "trace", "format": "mooncake", "path": "traces/mooncake_sample.jsonl",
           "model_filter": "GPT-4"})",
       "/workload/model_filter: only applies to format \"burstgpt\""},
      {R"({"kind": "trace", "format": "mooncake", "path": "traces/mooncake_sample.jsonl",
           "time_scale": 0})",
       "/workload/time_scale: must be in (0, 1e6]"},
      {R"({"kind": "trace", "format": "mooncake", "path": "traces/mooncake_sample.jsonl",
           "warmup_requests": 30})",
       "/workload/warmup_requests: must be less than the number of requests (30)"},
      {R"({"kind": "trace", "format": "mooncake", "path": "traces/mooncake_sample.jsonl",
           "start_s": 1e6})",
       "/workload/start_s: no trace requests fall in the window"},
      {R"({"kind": "trace", "format": "azure_2023", "path": "traces/mooncake_sample.jsonl"})",
       "/workload/path: SCENARIOS/traces/mooncake_sample.jsonl:1: header lacks column "
       "'TIMESTAMP'"},
  };
  const std::string scenarios = DataPath("scenarios");
  for (const auto& c : cases) {
    auto w = LoadFromText(c.json);
    ASSERT_FALSE(w.ok()) << c.json;
    std::string want = c.want;
    if (auto p = want.find("SCENARIOS"); p != std::string::npos) want.replace(p, 9, scenarios);
    EXPECT_NE(w.status().message().find(want), std::string::npos)
        << c.json << "\n  -> " << w.status().message();
    EXPECT_EQ(w.status().code(), c.code) << w.status().message();
    EXPECT_EQ(w.status().message().rfind("scenario.json: /workload", 0), 0u)
        << w.status().message();
  }
}

TEST(WorkloadErrorsTest, MalformedTraceRowNamesFileLine) {
  const std::string path = test_util::TestTempPath("bad_azure.csv");
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:00:00.0000000,10,5\n"
        "2023-11-16 18:00:01.0000000,ten,5\n",
        f);
    std::fclose(f);
  }
  auto w = LoadFromText(R"({"kind": "trace", "format": "azure_2023", "path": ")" + path + "\"}");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find(path + ":3: column 'ContextTokens'"), std::string::npos)
      << w.status().message();
}

}  // namespace
}  // namespace capplan::sim
