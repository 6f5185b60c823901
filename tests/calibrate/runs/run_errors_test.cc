// Malformed result files: every error is one line naming the file, the key
// (or line) and what the file should hold.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "calibrate/runs/run_file.h"
#include "calibrate/runs/tool_json.h"

namespace capplan::calibrate::runs {
namespace {

std::string Error(const std::string& text, const std::string& format = "auto") {
  auto r = ReadRunText(text, "f.json", format);
  EXPECT_FALSE(r.ok()) << text;
  if (r.ok()) return "";
  const std::string m = r.status().message();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  return m;
}

bool Has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The smallest vLLM result the reader accepts, with `drop` removed and
// `extra` merged in.
std::string Vllm(const std::string& drop = "", const std::string& extra = "{}") {
  nlohmann::json j = {{"num_prompts", 10},
                      {"completed", 10},
                      {"total_input_tokens", 100},
                      {"total_output_tokens", 50},
                      {"request_throughput", 1.0},
                      {"output_throughput", 5.0},
                      {"total_token_throughput", 15.0},
                      {"mean_ttft_ms", 10.0},
                      {"request_rate", "inf"},
                      {"max_concurrency", 2}};
  if (!drop.empty()) j.erase(drop);
  j.update(nlohmann::json::parse(extra));
  return j.dump();
}

std::string Sglang(const std::string& drop = "", const std::string& extra = "{}") {
  nlohmann::json j = {{"completed", 4},
                      {"total_input_tokens", 40},
                      {"total_output_tokens", 8},
                      {"request_throughput", 1.0},
                      {"input_throughput", 10.0},
                      {"output_throughput", 2.0},
                      {"mean_e2e_latency_ms", 900.0},
                      {"max_concurrency", 2}};
  if (!drop.empty()) j.erase(drop);
  j.update(nlohmann::json::parse(extra));
  return j.dump();
}

TEST(RunErrors, MinimalVllmResultReads) {
  auto r = ReadRunText(Vllm(), "f.json", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].measured.size(), 4u);
}

TEST(RunErrors, MissingKeyNamesFileKeyAndTheToolsShape) {
  const std::string m = Error(Vllm("num_prompts"));
  EXPECT_TRUE(Has(m, "f.json: /num_prompts: required field is missing")) << m;
  EXPECT_TRUE(Has(m, "vllm bench serve --save-result")) << m;
  EXPECT_TRUE(Has(m, "--format")) << m;
  EXPECT_TRUE(Has(Error(Sglang("completed")), "f.json:1: /completed: required field is missing"));
  EXPECT_TRUE(Has(Error(Sglang("output_throughput"), "sglang"),
                  "/output_throughput: required field is missing"));
}

TEST(RunErrors, WrongTypesAndRanges) {
  EXPECT_TRUE(Has(Error(Vllm("", R"({"completed": "ten"})")), "/completed: must be an integer"));
  EXPECT_TRUE(Has(Error(Vllm("", R"({"request_rate": "fast"})")),
                  "/request_rate: must be a number > 0 or \"inf\", got 'fast'"));
  EXPECT_TRUE(Has(Error(Vllm("", R"({"max_concurrency": 0})")), "/max_concurrency: must be in"));
  EXPECT_TRUE(Has(Error(Vllm("", R"({"mean_ttft_ms": [1]})")), "/mean_ttft_ms: must be a number"));
  EXPECT_TRUE(Has(Error(Vllm("", R"({"input_lens": [1, 2], "output_lens": [1]})")),
                  "/output_lens: has 1 entries, input_lens 2"));
  EXPECT_TRUE(Has(Error(Vllm("", R"({"input_lens": [1.5], "output_lens": [1]})")),
                  "/input_lens: entry 0 is not a token count"));
}

TEST(RunErrors, EmptyAndUnknownShapes) {
  EXPECT_TRUE(Has(Error(""), "f.json: empty file"));
  EXPECT_TRUE(Has(Error("\n  \n"), "f.json: empty file"));
  EXPECT_TRUE(Has(Error("", "guidellm"), "f.json: empty file; expected a guidellm"));
  EXPECT_TRUE(Has(Error("", "sglang"), "f.json: no run in the file"));
  const std::string m = Error(R"({"throughput": 3})");
  EXPECT_TRUE(Has(m,
                  "not a benchmark result capplan knows: expected the key "
                  "'total_token_throughput'"))
      << m;
  EXPECT_TRUE(Has(Error("[1, 2]"), "expected a JSON object (a benchmark result), got array"));
  EXPECT_TRUE(Has(Error("{\"a\": "), "f.json: line 1"));
  EXPECT_TRUE(Has(Error(Vllm(), "vlm"),
                  "--format: unknown format 'vlm'; did you mean 'vllm'? (one of vllm, sglang"));
}

TEST(RunErrors, MetricsOfZeroAreNotedNotCompared) {
  auto r = ReadRunText(Vllm("", R"({"mean_ttft_ms": 0, "output_throughput": 0})"), "f.json", "");
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const auto& [k, v] : (*r)[0].measured) {
    EXPECT_NE(k, "mean_ttft_ms");
    EXPECT_NE(k, "output_throughput");
  }
  const auto& notes = (*r)[0].notes;
  EXPECT_NE(std::find(notes.begin(), notes.end(),
                      "'output_throughput' is not > 0: output_throughput not compared"),
            notes.end());
}

TEST(RunErrors, SglangBadLineIsNamedByNumber) {
  const std::string text = Sglang() + "\n\n" + Sglang("", R"({"completed": -1})") + "\n";
  const std::string m = Error(text, "sglang");
  EXPECT_TRUE(Has(
      m, "f.json:3: /completed: must be in [1, 1e+09], got -1 (as `python -m sglang.bench_serving"))
      << m;
  EXPECT_TRUE(Has(Error(Sglang() + "\n{oops}\n", "sglang"), "f.json:2: line 1, column 2"));
}

TEST(RunErrors, PythonNonFiniteTokensOutsideStringsOnly) {
  auto j = ParseToolJson(R"({"a": Infinity, "b": -Infinity, "c": NaN, "d": "NaN Infinity",
                            "e": [Infinity]})",
                         "t");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ((*j)["a"], "inf");
  EXPECT_EQ((*j)["b"], "-inf");
  EXPECT_TRUE((*j)["c"].is_null());
  EXPECT_EQ((*j)["d"], "NaN Infinity");
  EXPECT_EQ((*j)["e"][0], "inf");
  EXPECT_FALSE(ParseToolJson(R"({"a": Infinityx})", "t").ok());
}

TEST(RunErrors, GuidellmShapes) {
  EXPECT_TRUE(Has(Error(R"({"benchmarks": []})"), "/benchmarks: must be a non-empty array"));
  const std::string no_metrics =
      R"({"benchmarks": [{"config": {"strategy": {"type_": "concurrent", "streams": 4}}}]})";
  EXPECT_TRUE(Has(Error(no_metrics), "/benchmarks/0/metrics: required object is missing"));
  EXPECT_TRUE(Has(Error(no_metrics), "GuideLLM writes benchmarks.json"));
  const std::string odd =
      R"({"benchmarks": [{"config": {"strategy": {"type_": "sweep"}}, "metrics": {}}]})";
  EXPECT_TRUE(Has(Error(odd), "/benchmarks/0/config/strategy/type_: "));
}

TEST(RunErrors, InferencexShapes) {
  const std::string ok = R"({"conc": 4, "isl": 1024, "osl": 128, "tput_per_gpu": 100.0,
      "output_tput_per_gpu": 20.0, "mean_ttft": 0.05, "tp": 8})";
  auto r = ReadRunText(ok, "f.json", "inferencex");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].workload.num_requests, 40);
  std::string multi = ok;
  multi.insert(1, R"("is_multinode": true, )");
  EXPECT_TRUE(Has(Error(multi), "/is_multinode: a multi-node (disaggregated) result"));
  std::string no_conc = R"({"isl": 1, "osl": 1, "tput_per_gpu": 1, "output_tput_per_gpu": 1})";
  EXPECT_TRUE(Has(Error(no_conc), "/conc: required field is missing (as InferenceX"));
}

}  // namespace
}  // namespace capplan::calibrate::runs
