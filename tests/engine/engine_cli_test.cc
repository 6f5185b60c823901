// `capplan engine ...` as a user runs it.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/test_util/shell.h"

namespace {

struct Out {
  int rc;
  std::string text;
};

Out RunShell(const std::string& cmd_line) {
  Out o;
  o.rc = capplan::test_util::Sh(cmd_line, &o.text);
  return o;
}

Out RunCapplan(const std::string& args) { return RunShell(std::string(CAPPLAN_BIN) + " " + args); }

std::string TempPath(const std::string& name) { return capplan::test_util::TestTempPath(name); }

std::string BinDir() {
  const std::string bin = CAPPLAN_BIN;
  return bin.substr(0, bin.rfind('/'));
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

TEST(EngineCliTest, CudaBackendRunsOnTheGpuOrFailsWithOneLineNeverFallsBack) {
  const std::string out = TempPath("cuda_run.json");
  const Out o = RunCapplan("engine serve-bench --scenario " + std::string(CAPPLAN_SOURCE_DIR) +
                           "/scenarios/kimi-k2.6-kv-fp8.json --backend cuda --cpu-dims small"
                           " --num-requests 2 --concurrency 2 --input-len 16 --output-len 2"
                           " --out " +
                           out);
  if (o.rc == 0) {  // a device machine: the file must say the GPU ran it
    std::ifstream in(out);
    const auto j = nlohmann::json::parse(in);
    EXPECT_EQ(j["backend"], "cuda");
    EXPECT_NE(j["gpu"], "cpu");
    return;
  }
  EXPECT_EQ(o.rc, 1) << o.text;
  EXPECT_NE(o.text.find("no CUDA device: use --backend cpu"), std::string::npos) << o.text;
  EXPECT_EQ(o.text.find('\n'), o.text.size() - 1) << "one line: " << o.text;
  EXPECT_FALSE(std::ifstream(out).good()) << "no run file may be written";
}

TEST(EngineCliTest, DeviceServeBenchScriptDryRunWritesCpuLabelledRuns) {
  // engine/device/serve_bench.sh --dry-run, as engine/device/run.sh --dry-run
  // calls it: CPU backend, small dims, the first run and its twice-the-layers
  // repeat (the linearity pair), packed into the tarball.
  const std::string dir = TempPath("serve_bench_dry");
  const Out o = RunShell(std::string(CAPPLAN_SOURCE_DIR) + "/engine/device/serve_bench.sh" +
                         " --dry-run --max-runs 2 --build " + BinDir() + " --out " + dir +
                         " --work " + dir + "/work");
  ASSERT_EQ(o.rc, 0) << o.text;
  EXPECT_NE(o.text.find("kimi-k2.6-kvfp8-wint4-none-c1-L2"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("kimi-k2.6-kvfp8-wint4-none-c1-L4"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("linearity: "), std::string::npos) << o.text;
  EXPECT_EQ(o.text.find("FAILED"), std::string::npos) << o.text;
  for (int layers : {2, 4}) {
    std::ifstream in(dir + "/work/kimi-k2.6-kvfp8-wint4-none-c1-L" + std::to_string(layers) +
                     ".json");
    ASSERT_TRUE(in.good()) << o.text;
    const auto j = nlohmann::json::parse(in);
    EXPECT_EQ(j["format"], "capplan.engine_run.v1");
    EXPECT_EQ(j["backend"], "cpu");
    EXPECT_EQ(j["layers"].get<int>(), layers);
    EXPECT_EQ(j["slice"]["dims"], "small");
    EXPECT_EQ(j["slice"]["intermediate_size"].get<int>(), 96);
    const auto& it = j["iterations"][0];
    EXPECT_TRUE(it.contains("op_us")) << it.dump();
    // Times by the layer program's op ids (a dense layer, then MoE layers),
    // of which op_us is the sum by class.
    ASSERT_TRUE(it.contains("op_id_us")) << it.dump();
    for (const char* id : {"embed_tokens", "norm.input", "attn.kv_append", "attn.o_proj",
                           "dense.gate_up_proj", "moe.gate", "moe.experts", "lm_head",
                           "sampling"}) {
      EXPECT_TRUE(it["op_id_us"].contains(id)) << id << ": " << it.dump();
    }
    double by_id = 0, by_class = 0;
    for (const auto& [id, us] : it["op_id_us"].items()) by_id += us.get<double>();
    for (const auto& [cls, us] : it["op_us"].items()) by_class += us.get<double>();
    // op_us leaves out only the collectives, which move nothing on one rank.
    EXPECT_LE(by_class, by_id * (1 + 1e-9)) << it.dump();
    EXPECT_GE(by_class, by_id * 0.9) << it.dump();
    EXPECT_LE(by_id, it["forward_us"].get<double>()) << it.dump();
  }
  EXPECT_TRUE(std::ifstream(dir + "/engine_runs.tar.gz").good());
}

}  // namespace
