#include "sim/workload/length_dist.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <vector>

#include "common/data_path.h"
#include "tests/test_util/temp_dir.h"

namespace capplan::sim {
namespace {

Result<std::unique_ptr<LengthDist>> Parse(const std::string& text, const std::string& dir = "") {
  static nlohmann::json doc;  // JsonObject keeps a pointer; outlives the call
  doc = nlohmann::json::parse(text);
  JsonObject o(doc, "s.json", "/workload/input_tokens");
  return ParseLengthDist(o, dir);
}

std::vector<int64_t> Draw(const LengthDist& d, int n, uint64_t seed = 5) {
  WorkloadRng rng(seed, 1);
  std::vector<int64_t> v;
  for (int i = 0; i < n; ++i) v.push_back(d.Sample(rng));
  return v;
}

TEST(LengthDistTest, Fixed) {
  auto d = Parse(R"({"dist": "fixed", "value": 16384})");
  ASSERT_TRUE(d.ok()) << d.status().message();
  for (int64_t v : Draw(**d, 10)) EXPECT_EQ(v, 16384);
  EXPECT_EQ((*d)->Describe(), "fixed(16384)");
}

TEST(LengthDistTest, FixedClampedToMax) {
  auto d = Parse(R"({"dist": "fixed", "value": 100, "max": 64})");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(Draw(**d, 1)[0], 64);
}

TEST(LengthDistTest, UniformMinMaxInclusive) {
  auto d = Parse(R"({"dist": "uniform", "min": 3, "max": 6})");
  ASSERT_TRUE(d.ok()) << d.status().message();
  std::map<int64_t, int> seen;
  for (int64_t v : Draw(**d, 2000)) ++seen[v];
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen.begin()->first, 3);
  EXPECT_EQ(seen.rbegin()->first, 6);
}

// The same --random-range-ratio 0.5 means different ranges in the two
// benchmarks (vLLM's vllm/benchmarks/serve.py, SGLang's
// python/sglang/bench_serving.py); both are offered.
TEST(LengthDistTest, RangeRatioConventions) {
  auto v = Parse(R"({"dist": "uniform", "value": 1000, "range_ratio": 0.5, "convention": "vllm"})");
  auto s =
      Parse(R"({"dist": "uniform", "value": 1000, "range_ratio": 0.5, "convention": "sglang"})");
  ASSERT_TRUE(v.ok() && s.ok());
  EXPECT_EQ((*v)->Describe(), "uniform[500,1500]");
  EXPECT_EQ((*s)->Describe(), "uniform[500,1000]");
  auto s0 =
      Parse(R"({"dist": "uniform", "value": 1000, "range_ratio": 0, "convention": "sglang"})");
  ASSERT_TRUE(s0.ok());
  EXPECT_EQ((*s0)->Describe(), "uniform[1,1000]");  // SGLang's default: lengths up to len
  auto v0 = Parse(R"({"dist": "uniform", "value": 1000, "range_ratio": 0, "convention": "vllm"})");
  ASSERT_TRUE(v0.ok());
  EXPECT_EQ((*v0)->Describe(), "uniform[1000,1000]");  // vLLM's default: fixed
}

TEST(LengthDistTest, NormalClampedToAtLeastOne) {
  auto d = Parse(R"({"dist": "normal", "mean": 2, "std": 50})");
  ASSERT_TRUE(d.ok()) << d.status().message();
  int ones = 0;
  for (int64_t v : Draw(**d, 1000)) {
    ASSERT_GE(v, 1);
    ones += v == 1;
  }
  EXPECT_GT(ones, 400);  // about half the mass is below 1
}

TEST(LengthDistTest, NormalMean) {
  auto d = Parse(R"({"dist": "normal", "mean": 1000, "std": 100})");
  ASSERT_TRUE(d.ok());
  double sum = 0;
  for (int64_t v : Draw(**d, 10000)) sum += static_cast<double>(v);
  EXPECT_NEAR(sum / 10000, 1000, 4);
}

TEST(LengthDistTest, LognormalMedianP90) {
  auto d = Parse(R"({"dist": "lognormal", "median": 1000, "p90": 4000})");
  ASSERT_TRUE(d.ok()) << d.status().message();
  auto v = Draw(**d, 20000);
  std::sort(v.begin(), v.end());
  EXPECT_NEAR(static_cast<double>(v[10000]), 1000, 60);
  EXPECT_NEAR(static_cast<double>(v[18000]), 4000, 300);
}

TEST(LengthDistTest, LognormalMuSigmaMatchesMedianForm) {
  auto a = Parse(R"({"dist": "lognormal", "mu": 6.907755278982137, "sigma": 0.5})");
  ASSERT_TRUE(a.ok());
  auto v = Draw(**a, 20000);
  std::sort(v.begin(), v.end());
  EXPECT_NEAR(static_cast<double>(v[10000]), 1000, 30);
}

TEST(LengthDistTest, EmpiricalInlineWeights) {
  auto d = Parse(R"({"dist": "empirical", "values": [10, 20, 30], "weights": [1, 0, 3]})");
  ASSERT_TRUE(d.ok()) << d.status().message();
  std::map<int64_t, int> seen;
  for (int64_t v : Draw(**d, 4000)) ++seen[v];
  EXPECT_EQ(seen.count(20), 0u);
  EXPECT_NEAR(seen[10], 1000, 120);
  EXPECT_NEAR(seen[30], 3000, 120);
}

TEST(LengthDistTest, EmpiricalFileRelativeToScenarioDir) {
  auto d =
      Parse(R"({"dist": "empirical", "path": "traces/lengths_sample.txt"})", DataPath("scenarios"));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ((*d)->Describe(), "empirical(24 values)");
  for (int64_t v : Draw(**d, 100)) EXPECT_GE(v, 1);
}

TEST(LengthDistTest, EmpiricalFileBadLineNamesFileAndLine) {
  const std::string path = test_util::TestTempPath("bad_lengths.txt");
  std::ofstream(path) << "# header\n100\n200,abc\n";
  auto d = Parse(R"({"dist": "empirical", "path": ")" + path + R"("})");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find(path + ":3:"), std::string::npos) << d.status().message();
  EXPECT_NE(d.status().message().find("/workload/input_tokens/path"), std::string::npos);
}

// Inverse transform with linear interpolation: two points 100 and 300 are a
// uniform draw over [100, 300]; a mean rescales every point.
TEST(LengthDistTest, QuantilesInterpolateAndRescaleToTheMean) {
  auto d = Parse(R"({"dist": "quantiles", "values": [100, 300]})");
  ASSERT_TRUE(d.ok()) << d.status().message();
  auto v = Draw(**d, 20000);
  EXPECT_EQ(*std::min_element(v.begin(), v.end()), 100);
  EXPECT_EQ(*std::max_element(v.begin(), v.end()), 300);
  double sum = 0;
  for (int64_t x : v) sum += static_cast<double>(x);
  EXPECT_NEAR(sum / 20000, 200, 2);
  auto s = Parse(R"({"dist": "quantiles", "values": [100, 300], "mean": 50})");
  ASSERT_TRUE(s.ok());
  auto w = Draw(**s, 20000);
  EXPECT_EQ(*std::max_element(w.begin(), w.end()), 75);
  sum = 0;
  for (int64_t x : w) sum += static_cast<double>(x);
  EXPECT_NEAR(sum / 20000, 50, 1);
}

// The shipped ShareGPT prompt shape: heavy-tailed (median far below the
// mean), its percentiles as the file gives them, and the mean asked for.
TEST(LengthDistTest, ShareGptPresetKeepsItsShapeAtTheMeanAskedFor) {
  auto d = Parse(R"({"dist": "quantiles", "preset": "sharegpt_prompt", "mean": 217.4})");
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ((*d)->Describe(), "quantiles(sharegpt_prompt,101 points,mean=217.4)");
  auto v = Draw(**d, 40000);
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (int64_t x : v) sum += static_cast<double>(x);
  EXPECT_NEAR(sum / 40000, 217.4, 4);
  // The file's median is 34 and its points' mean 119.6-ish: the median
  // scales with the mean.
  const double median = static_cast<double>(v[20000]);
  EXPECT_LT(median, 0.4 * 217.4);
  EXPECT_GT(median, 0.2 * 217.4);
  auto plain = Parse(R"({"dist": "quantiles", "preset": "sharegpt_prompt"})");
  ASSERT_TRUE(plain.ok());
  auto p = Draw(**plain, 40000);
  EXPECT_EQ(*std::max_element(p.begin(), p.end()), 1024);  // vllm bench serve's prompt cap
}

TEST(LengthDistTest, Errors) {
  struct Case {
    const char* json;
    const char* want;
  } cases[] = {
      {R"({"dist": "lognormall", "mu": 1, "sigma": 1})", "did you mean 'lognormal'"},
      {R"({"dist": "zipf"})", "known: empirical, fixed, lognormal, normal, quantiles, uniform"},
      {R"({"dist": "fixed"})", "/workload/input_tokens/value: required field is missing"},
      {R"({"dist": "fixed", "value": 0})", "/workload/input_tokens/value: must be a token count"},
      {R"({"dist": "fixed", "value": 5, "vlaue": 3})", "unknown field; did you mean 'value'"},
      {R"({"dist": "uniform", "min": 10, "max": 5})", "/max: must be >= min"},
      {R"({"dist": "uniform", "value": 10, "range_ratio": 0.1, "convention": "vlm"})",
       "did you mean 'vllm'"},
      {R"({"dist": "uniform", "value": 10, "range_ratio": 1.5, "convention": "vllm"})",
       "/range_ratio: must be in"},
      {R"({"dist": "normal", "mean": 100, "std": -1})", "/std: must be >= 0"},
      {R"({"dist": "lognormal", "median": 100, "p90": 50})", "/p90: must be >= median"},
      {R"({"dist": "lognormal", "median": 100, "p90": 200, "sigma": 1})", "not both"},
      {R"({"dist": "empirical", "values": []})", "/values: must not be empty"},
      {R"({"dist": "empirical", "values": [1.5]})", "integer token counts"},
      {R"({"dist": "empirical", "values": [1, 2], "weights": [1]})", "one weight per value"},
      {R"({"dist": "empirical", "values": [1, 2], "weights": [0, 0]})", "not all be zero"},
      {R"({"dist": "empirical", "path": "no/such/file.txt"})",
       "no/such/file.txt: cannot open file"},
      {R"({"dist": "fixed", "value": 5, "max": 0})", "/max: must be a token count in [1, "},
      {R"({"dist": "quantiles", "values": [5]})", "/values: needs at least 2 points"},
      {R"({"dist": "quantiles", "values": [5, 3]})", "point 1 is below the one before it"},
      {R"({"dist": "quantiles", "values": [1, 2], "preset": "sharegpt_prompt"})",
       "give exactly one of preset, path or values"},
      {R"({"dist": "quantiles", "preset": "sharegpt"})",
       "unknown preset 'sharegpt'; presets: sharegpt_output, sharegpt_prompt"},
      {R"({"dist": "quantiles", "preset": "../x"})", "unknown preset '../x'"},
      {R"({"dist": "quantiles", "values": [1, 2], "mean": 0})", "/mean: must be in"},
  };
  for (const auto& c : cases) {
    auto d = Parse(c.json);
    ASSERT_FALSE(d.ok()) << c.json;
    EXPECT_NE(d.status().message().find(c.want), std::string::npos)
        << c.json << " -> " << d.status().message();
    EXPECT_EQ(d.status().message().rfind("s.json: ", 0), 0u) << d.status().message();
  }
}

}  // namespace
}  // namespace capplan::sim
