// `capplan launch`: the engine command of a scenario or a search's winner,
// with the flags of the deployment's engine release
// (models/engine_launch_flags.json).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "common/cli.h"
#include "common/data_path.h"
#include "tests/test_util/shell.h"

namespace capplan::cli {
namespace {

struct Launched {
  Status status;
  std::string out;
};

Launched Launch(std::vector<std::string> args) {
  CommandTable table;
  RegisterLaunchCommand(&table);
  std::ostringstream out, err;
  CommandContext ctx{&out, &err, false};
  args.insert(args.begin(), "launch");
  Status st = table.Dispatch(args, ctx);
  return {st, out.str()};
}

std::string Scenario(const std::string& rel) { return DataPath(rel); }

TEST(Launch, SglangScenarioGolden) {
  const Launched r = Launch({Scenario("scenarios/kimi-k2.6-kv-fp8.json"), "--model-path",
                             "moonshotai/Kimi-K2.6"});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.out,
            "# kimi-k2.6-kv-fp8: sglang 0.5.4 (newest known), 8 GPUs of h200-sxm\n"
            "python -m sglang.launch_server --model-path moonshotai/Kimi-K2.6 --tp-size 8 "
            "--kv-cache-dtype fp8_e4m3 --chunked-prefill-size 8192 --page-size 64\n"
            "# phase decode_only: the simulation priced one phase; the server runs both\n");
}

TEST(Launch, VllmScenarioGolden) {
  const Launched r = Launch({Scenario("scenarios/whatif/deepseek-r1-h200-fp8.json"),
                             "--model-path", "deepseek-ai/DeepSeek-R1-0528"});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.out,
            "# deepseek-r1-h200-fp8: vllm 0.21.0, 8 GPUs of h200-sxm\n"
            "vllm serve deepseek-ai/DeepSeek-R1-0528 --tensor-parallel-size 8 "
            "--kv-cache-dtype fp8 --gpu-memory-utilization 0.9 --max-num-seqs 64\n");
}

// A launch backend the deployment names is printed as the engine's flag.
TEST(Launch, AttentionBackendIsPrinted) {
  const Launched r = Launch({Scenario("scenarios/kimi-k2.6-kv-fp8.json"), "--set",
                             "deployment.attention_backend=flashinfer", "--set",
                             "deployment.moe_runner_backend=triton"});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_NE(r.out.find(" --attention-backend flashinfer"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" --moe-runner-backend triton"), std::string::npos) << r.out;
  const Launched v = Launch({Scenario("scenarios/whatif/deepseek-r1-h200-fp8.json"), "--set",
                             "deployment.attention_backend=FLASHMLA"});
  ASSERT_TRUE(v.status.ok()) << v.status.message();
  EXPECT_NE(v.out.find(" --attention-backend FLASHMLA"), std::string::npos) << v.out;
}

TEST(Launch, VllmAttentionDataParallelWithExpertParallel) {
  const Launched r = Launch({Scenario("scenarios/whatif/deepseek-r1-h200-fp8.json"), "--set",
                             "deployment.dp_attention=true", "--set", "deployment.ep=8"});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_NE(r.out.find("vllm serve deepseek-v3 --tensor-parallel-size 1 --data-parallel-size 8 "
                       "--enable-expert-parallel "),
            std::string::npos)
      << r.out;
  // The model is a card name, and the command says so instead of guessing
  // a checkpoint.
  EXPECT_NE(r.out.find("# deepseek-v3 is capplan's card name"), std::string::npos) << r.out;
}

TEST(Launch, VllmExpertParallelNarrowerThanAllRanksIsRefused) {
  const Launched r = Launch({Scenario("scenarios/whatif/deepseek-r1-h200-fp8.json"), "--set",
                             "deployment.ep=4"});
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("ep must be 1 or 8"), std::string::npos)
      << r.status.message();
  EXPECT_EQ(r.status.message().find('\n'), std::string::npos);
}

TEST(Launch, WideEpMultiNodeSglang) {
  const Launched r = Launch({Scenario("scenarios/wide-ep/deepseek-r1-ep16-h200-2node.json")});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_NE(r.out.find(" --tp-size 16 --enable-dp-attention --dp-size 16 --ep-size 16 "
                       "--ep-num-redundant-experts 16 --kv-cache-dtype fp8_e4m3 --page-size 64 --moe-a2a-backend deepep "
                       "--nnodes 2 --node-rank 0 --dist-init-addr HEAD_IP:5000\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("# nodes 2: run on every node"), std::string::npos) << r.out;
}

// SGLang counts redundant experts over all EP ranks, as the scenario does.
TEST(Launch, SglangRedundantExpertsAreTheTotal) {
  const Launched r = Launch({Scenario("scenarios/wide-ep/deepseek-r1-ep48-h200-redundant.json")});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_NE(r.out.find(" --tp-size 48 --enable-dp-attention --dp-size 48 --ep-size 48 "
                       "--ep-num-redundant-experts 32 "),
            std::string::npos)
      << r.out;
}

// Two-batch overlap prints the flag the engine profile names for the
// version (models/engines/*.json micro_batch_overlap).
TEST(Launch, TwoBatchOverlapFlag) {
  const Launched s = Launch({Scenario("scenarios/wide-ep/deepseek-r1-ep32-h200-rdma-tbo.json")});
  ASSERT_TRUE(s.status.ok()) << s.status.message();
  EXPECT_NE(s.out.find(" --moe-a2a-backend deepep --enable-two-batch-overlap "), std::string::npos)
      << s.out;
  const Launched v = Launch({Scenario("scenarios/wide-ep/glm-5.2-vllm-dp-ep16-h200.json"), "--set",
                             "deployment.two_batch_overlap=true"});
  ASSERT_TRUE(v.status.ok()) << v.status.message();
  EXPECT_NE(v.out.find(" --all2all-backend deepep_low_latency --enable-dbo "), std::string::npos)
      << v.out;
}

// SGLang's flag for the dense layers on each DP rank, printed only where
// the scenario departs from the version's default.
TEST(Launch, DenseLayersPerDpRankFlag) {
  const std::string file = Scenario("scenarios/wide-ep/deepseek-r1-ep32-h200-rdma.json");
  const Launched off = Launch({file});
  ASSERT_TRUE(off.status.ok()) << off.status.message();
  EXPECT_EQ(off.out.find("--moe-dense-tp-size"), std::string::npos) << off.out;
  const Launched on = Launch({file, "--set", "deployment.dense_ffn_per_dp_rank=true", "--set",
                              "deployment.lm_head_per_dp_rank=true"});
  ASSERT_TRUE(on.status.ok()) << on.status.message();
  EXPECT_NE(on.out.find(" --moe-dense-tp-size 1"), std::string::npos) << on.out;
  EXPECT_NE(on.out.find(" --enable-dp-lm-head"), std::string::npos) << on.out;
}

// vLLM's wide EP: DP attention over 16 ranks on 2 nodes, EPLB with its
// redundant experts, DeepEP's low-latency kernels; each node runs 8 ranks.
TEST(Launch, VllmWideEpAcrossNodes) {
  const Launched r = Launch({Scenario("scenarios/wide-ep/glm-5.2-vllm-dp-ep16-h200.json")});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_NE(r.out.find("vllm serve glm-5.2 --tensor-parallel-size 1 --data-parallel-size 16 "
                       "--enable-expert-parallel --enable-eplb "
                       "--eplb-config.num_redundant_experts 32 "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(" --all2all-backend deepep_low_latency --data-parallel-size-local 8 "
                       "--data-parallel-address HEAD_IP\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("--headless --data-parallel-start-rank i x 8"), std::string::npos) << r.out;
}

TEST(Launch, ReleaseWithoutTheFlagIsAOneLineErrorNotAWrongFlag) {
  // --ep-size is listed from SGLang 0.4.5.
  const Launched r = Launch({Scenario("scenarios/kimi-k2.6-kv-fp8.json"), "--set",
                             "deployment.engine_version=0.4.0", "--set", "deployment.ep=8"});
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(),
            "launch: " + Scenario("scenarios/kimi-k2.6-kv-fp8.json") +
                ": /deployment/ep 8: sglang 0.4.0 lacks --ep-size (from 0.4.5, "
                "models/engine_launch_flags.json); set deployment.engine_version to a release "
                "that has it, or change the setting");
  // 0.4.x switched EP on with --enable-ep-moe beside --ep-size; 0.5 dropped it.
  const Launched old = Launch({Scenario("scenarios/kimi-k2.6-kv-fp8.json"), "--set",
                               "deployment.engine_version=0.4.6", "--set", "deployment.ep=8"});
  ASSERT_TRUE(old.status.ok()) << old.status.message();
  EXPECT_NE(old.out.find(" --enable-ep-moe --ep-size 8 "), std::string::npos) << old.out;
  const Launched now = Launch({Scenario("scenarios/kimi-k2.6-kv-fp8.json"), "--set",
                               "deployment.ep=8"});
  ASSERT_TRUE(now.status.ok()) << now.status.message();
  EXPECT_EQ(now.out.find("--enable-ep-moe"), std::string::npos) << now.out;
}

TEST(Launch, TuningKnobWithoutAFlagIsAComment) {
  // vLLM has no overlap-schedule switch: the command says so and omits it.
  const Launched r = Launch({Scenario("scenarios/whatif/deepseek-r1-h200-fp8.json"), "--set",
                             "deployment.overlap_schedule=false"});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_NE(r.out.find("# overlap_schedule false: vllm has no flag for it in "
                       "models/engine_launch_flags.json; the engine's default applies\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("overlap-schedule"), std::string::npos) << r.out;
}

TEST(Launch, PdScenarioPrintsOneCommandPerPool) {
  const Launched r = Launch({Scenario("scenarios/pd-kimi-k2.6.json")});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  const size_t pre = r.out.find("--disaggregation-mode prefill");
  const size_t dec = r.out.find("--disaggregation-mode decode");
  ASSERT_NE(pre, std::string::npos) << r.out;
  ASSERT_NE(dec, std::string::npos) << r.out;
  EXPECT_LT(pre, dec);
  EXPECT_NE(r.out.find("(prefill pool)"), std::string::npos) << r.out;
}

TEST(Launch, SearchDirectoryLaunchesItsWinner) {
  const std::string path = test_util::WriteTemp(
      "search.json", R"({"scenario": ")" + Scenario("scenarios/kimi-k2.6-kv-fp8.json") +
                         R"(", "winner": {"config": {"deployment.kv_cache": "bf16", )"
                         R"("deployment.tp": 4, "deployment.gpus": 4}}})");
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const Launched r = Launch({dir});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_NE(r.out.find(" --tp-size 4 --chunked-prefill-size"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("--kv-cache-dtype"), std::string::npos) << r.out;
  test_util::WriteTemp("search.json", R"({"scenario": "x.json", "winner": null})");
  const Launched none = Launch({dir});
  ASSERT_FALSE(none.status.ok());
  EXPECT_NE(none.status.message().find("no configuration met the SLOs"), std::string::npos);
}

}  // namespace
}  // namespace capplan::cli
