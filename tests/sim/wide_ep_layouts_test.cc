// Wide-EP layouts as the engines run them, from a scenario: redundant
// experts counted in total or per rank, the engine's divisibility rule as a
// one-line error at the field, and vLLM's data-parallel attention with
// expert parallelism, each DP rank with its own scheduler and KV pool.
#include <gtest/gtest.h>

#include "common/data_path.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "tests/test_util/expect_text.h"

namespace capplan::sim {
namespace {

using test_util::ExpectContains;

// A shipped wide-EP scenario cut to a short run.
nlohmann::json Short(const std::string& file, int concurrency) {
  auto doc = ReadJsonFile(DataPath("scenarios/wide-ep/" + file));
  EXPECT_TRUE(doc.ok()) << file;
  (*doc)["workload"]["concurrency"] = concurrency;
  (*doc)["workload"]["num_requests"] = concurrency;
  (*doc)["workload"]["warmup_requests"] = 0;
  (*doc)["workload"]["output_tokens"]["value"] = 8;
  return *doc;
}

Result<schema::RunSummary> RunDoc(const nlohmann::json& doc) {
  CAPPLAN_ASSIGN_OR_RETURN(auto sc, ParseScenario(doc, "w.json"));
  CAPPLAN_ASSIGN_OR_RETURN(auto run, RunScenario(*sc, RunOptions{}));
  return run.summary;
}

// 256 routed experts do not divide over 48 SGLang ranks: refused at the
// field with the count that does; 32 redundant experts make 288 = 6 x 48.
TEST(WideEpLayouts, SglangRefusesRanksTheExpertsDoNotDivide) {
  nlohmann::json doc = Short("deepseek-r1-ep48-h200-redundant.json", 48);
  doc["deployment"]["expert_parallel"].erase("redundant_experts");
  auto r = RunDoc(doc);
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidConfig);
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  ExpectContains(m, "w.json: /deployment/expert_parallel/redundant_experts: 256 routed + 0 "
                    "redundant experts do not divide over ep 48; sglang 0.5.4");
  ExpectContains(m, "set it to 32 (288 = 6 x 48)");
  doc["deployment"]["expert_parallel"]["redundant_experts"] = 32;
  auto ok = RunDoc(doc);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_GT(ok->output_throughput.value_or(0), 0);
}

// The same layout spelt as a total or per rank runs the same; both at once
// is refused in one line naming the field.
TEST(WideEpLayouts, RedundantTotalEqualsPerRank) {
  nlohmann::json per_rank = Short("deepseek-r1-ep16-h200-2node.json", 32);
  ASSERT_EQ(per_rank["deployment"]["expert_parallel"]["redundant_experts_per_rank"], 1);
  nlohmann::json total = per_rank;
  total["deployment"]["expert_parallel"].erase("redundant_experts_per_rank");
  total["deployment"]["expert_parallel"]["redundant_experts"] = 16;
  auto a = RunDoc(per_rank);
  auto b = RunDoc(total);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(a->output_throughput, b->output_throughput);
  EXPECT_EQ(a->pools[0].memory->terms_bytes_per_gpu, b->pools[0].memory->terms_bytes_per_gpu);
  EXPECT_GT(b->pools[0].memory->terms_bytes_per_gpu->at("eplb_redundant_expert_bytes"), 0);
  total["deployment"]["expert_parallel"]["redundant_experts_per_rank"] = 1;
  auto both = ParseScenario(total, "w.json");
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().message().find('\n'), std::string::npos);
  ExpectContains(both.status().message(),
                 "w.json: /deployment/expert_parallel/redundant_experts_per_rank: give "
                 "redundant_experts");
}

// vLLM's DP attention + EP (--data-parallel-size 16): 16 attention ranks,
// each its own KV pool, and each DP rank's engine core admits up to the
// whole max_num_seqs; SGLang splits its cap over the ranks. With a cap of
// 32 and 16 x 64 requests waiting, vLLM runs 32 per rank (512), SGLang 2
// per rank (32).
TEST(WideEpLayouts, VllmDataParallelRanksEachScheduleAndHoldTheirKv) {
  nlohmann::json doc = Short("glm-5.2-vllm-dp-ep16-h200.json", 1024);
  doc["deployment"]["max_running_requests"] = 32;
  auto vllm = RunDoc(doc);
  ASSERT_TRUE(vllm.ok()) << vllm.status().message();
  const schema::PoolSummary& p = vllm->pools[0];
  EXPECT_EQ(p.deployment["attention_ranks"], 16);
  EXPECT_EQ(p.max_running_requests_observed, 512);
  ASSERT_TRUE(p.memory->kv_tokens_per_rank.has_value());
  EXPECT_EQ(*p.kv_capacity_tokens, 16 * *p.memory->kv_tokens_per_rank);
  doc["deployment"]["engine"] = "sglang";
  doc["deployment"].erase("engine_version");
  doc["deployment"]["mem_fraction_static"] = 0.85;
  doc["deployment"]["cuda_graph_max_bs"] = 128;
  auto sglang = RunDoc(doc);
  ASSERT_TRUE(sglang.ok()) << sglang.status().message();
  EXPECT_EQ(sglang->pools[0].max_running_requests_observed, 32);
}

// SGLang gathers every DP rank's tokens for the dense layers unless
// --moe-dense-tp-size 1 keeps them on each rank, unsharded: at 128
// requests a rank the decode step loses more with the gather than it pays
// reading the whole dense weights (at a few requests a rank it is the other
// way round), and the summary echoes the choice. The flag's rules are
// one-line errors at the field.
TEST(WideEpLayouts, SglangDenseLayersOnEachDpRankByItsFlag) {
  nlohmann::json doc = Short("deepseek-r1-ep32-h200-rdma.json", 32 * 128);
  auto gathered = RunDoc(doc);
  ASSERT_TRUE(gathered.ok()) << gathered.status().message();
  doc["deployment"]["dense_ffn_per_dp_rank"] = true;
  auto own = RunDoc(doc);
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_LT(own->tpot.median.value_or(0), gathered->tpot.median.value_or(0));
  EXPECT_EQ(own->pools.at(0).deployment.value("dense_ffn_per_dp_rank", false), true);

  nlohmann::json old = doc;
  old["deployment"]["engine_version"] = "0.4.5";
  auto no_flag = RunDoc(old);
  ASSERT_FALSE(no_flag.ok());
  EXPECT_EQ(no_flag.status().message().find('\n'), std::string::npos);
  ExpectContains(no_flag.status().message(),
                 "/deployment/dense_ffn_per_dp_rank: sglang 0.4.5 has no flag keeping the layer "
                 "on each DP rank");
  nlohmann::json sharded = doc;
  sharded["deployment"]["dp"] = 16;
  auto tp2 = RunDoc(sharded);
  ASSERT_FALSE(tp2.ok());
  ExpectContains(tp2.status().message(), "--moe-dense-tp-size 1 runs the layer unsharded "
                                         "on each rank: it needs dp_attention with dp equal to tp");
  nlohmann::json vllm = Short("glm-5.2-vllm-dp-ep16-h200.json", 32);
  vllm["deployment"]["dense_ffn_per_dp_rank"] = false;
  auto always = RunDoc(vllm);
  ASSERT_FALSE(always.ok());
  ExpectContains(always.status().message(), "always keeps the layer on each DP rank");
}

// SGLang's LM head runs over the whole TP group on every DP rank's rows,
// its logits all-gathered over RDMA, unless --enable-dp-lm-head keeps it
// on each rank's own rows; vLLM's DP ranks always do. Over 32 ranks the
// gather of 128 rows' logits a rank costs more than the whole LM head.
TEST(WideEpLayouts, LmHeadOnEachDpRankDropsTheLogitGather) {
  nlohmann::json doc = Short("deepseek-r1-ep32-h200-rdma.json", 32 * 128);
  auto gathered = RunDoc(doc);
  ASSERT_TRUE(gathered.ok()) << gathered.status().message();
  doc["deployment"]["lm_head_per_dp_rank"] = true;
  auto own = RunDoc(doc);
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_LT(own->tpot.median.value_or(0), 0.9 * gathered->tpot.median.value_or(0));
  EXPECT_EQ(own->pools.at(0).deployment.value("lm_head_per_dp_rank", false), true);
  doc["deployment"]["engine_version"] = "0.4.5";
  auto old = RunDoc(doc);
  ASSERT_FALSE(old.ok());
  ExpectContains(old.status().message(), "/deployment/lm_head_per_dp_rank: sglang 0.4.5 has no "
                                         "flag keeping the layer on each DP rank");
  nlohmann::json vllm = Short("glm-5.2-vllm-dp-ep16-h200.json", 32);
  vllm["deployment"]["lm_head_per_dp_rank"] = false;
  auto always = RunDoc(vllm);
  ASSERT_FALSE(always.ok());
  ExpectContains(always.status().message(), "always keeps the layer on each DP rank");
}

}  // namespace
}  // namespace capplan::sim
