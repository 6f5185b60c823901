// Server logs: the start-up KV pool line and the step lines of vLLM and
// SGLang, as their loggers print them (calibrate/runs/server_log.h).
#include "calibrate/runs/server_log.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

namespace capplan::calibrate::runs {
namespace {

std::string ReadData(const std::string& name) {
  std::ifstream in(std::string(RUNS_DATA) + "/" + name);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(ServerLog, VllmStartupAndStatsLines) {
  auto log = ParseServerLog(ReadData("vllm-server.log"), "vllm-server.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->engine, "vllm");
  EXPECT_EQ(log->engine_version, "0.10.1");
  EXPECT_EQ(log->kv_tokens, 438192);  // "438,192 tokens"
  EXPECT_EQ(log->available_kv_gib, 53.49);
  EXPECT_EQ(log->periodic.lines, 3);
  EXPECT_EQ(log->periodic.running_max, 16);
  EXPECT_NEAR(log->periodic.kv_usage_max, 0.043, 1e-12);
  const nlohmann::json j = ServerLogToJson(*log);
  EXPECT_EQ(j["kv_line"], "GPU KV cache size: 438,192 tokens");
  EXPECT_NEAR(j["stats_lines"]["mean_running_requests"].get<double>(), 32.0 / 3, 1e-9);
}

TEST(ServerLog, SglangStartupAndBatchLines) {
  auto log = ParseServerLog(ReadData("sglang-server.log"), "sglang-server.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->engine, "sglang");
  EXPECT_EQ(log->kv_tokens, 456891);
  EXPECT_EQ(log->mem_fraction_static, 0.88);
  EXPECT_EQ(log->prefill.lines, 2);
  EXPECT_EQ(log->decode.lines, 4);
  EXPECT_EQ(log->decode.tokens_max, 35712);
  ASSERT_EQ(log->decode_by_running.size(), 2u);
  const DecodeGroup& g = log->decode_by_running.at(32);
  EXPECT_EQ(g.lines, 2);
  EXPECT_NEAR(g.tokens_sum / g.lines, (35200.0 + 35712.0) / 2, 1e-9);
  EXPECT_NEAR(g.throughput_sum / g.throughput_lines, (2810.50 + 2795.12) / 2, 1e-9);
  const nlohmann::json j = ServerLogToJson(*log);
  EXPECT_EQ(j["decode_by_running_requests"][0]["running_requests"], 8);
}

TEST(ServerLog, OlderAndVariantLines) {
  // vLLM V0's block count, "n/a" usage, SGLang's sliding-window "#full token".
  auto v0 = ParseServerLog(
      "INFO 05-01 [executor_base.py:113] # cuda blocks: 27000, # CPU blocks: 2048\n"
      "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
      "throughput: 10.0 tokens/s, Running: 2 reqs, Waiting: 1 reqs, GPU KV "
      "cache usage: n/a, Prefix cache hit rate: n/a\n",
      "v0.log");
  ASSERT_TRUE(v0.ok()) << v0.status().message();
  EXPECT_EQ(v0->gpu_blocks, 27000);
  EXPECT_FALSE(v0->kv_tokens.has_value());
  EXPECT_EQ(v0->periodic.waiting_max, 1);
  EXPECT_EQ(v0->periodic.kv_usage_max, 0);
  auto swa = ParseServerLog(
      "Decode batch. #running-req: 4, #full token: 900, full token usage: "
      "0.10, #swa token: 300, swa token usage: 0.05, gen throughput "
      "(token/s): 100.00, #queue-req: 0,\n",
      "swa.log");
  ASSERT_TRUE(swa.ok()) << swa.status().message();
  EXPECT_EQ(swa->decode.tokens_max, 900);
}

TEST(ServerLog, Errors) {
  auto none = ParseServerLog("hello\nworld\n", "x.log");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("x.log: no engine line found; expected vLLM's 'GPU KV "
                                         "cache size: N tokens'"),
            std::string::npos)
      << none.status().message();
  auto empty = ParseServerLog("", "e.log");
  EXPECT_FALSE(empty.ok());
  auto mixed = ParseServerLog("GPU KV cache size: 100 tokens\nmax_total_num_tokens=5\n", "m.log");
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().message(),
            "m.log:2: a sglang line in a vllm log; give one engine's log of the benchmarked run");
  // A count that is not a whole number is not taken as a pool size.
  auto odd = ParseServerLog("GPU KV cache size: 1.5 tokens\nRunning: 1 reqs\n", "o.log");
  EXPECT_FALSE(odd.ok());
}

}  // namespace
}  // namespace capplan::calibrate::runs
