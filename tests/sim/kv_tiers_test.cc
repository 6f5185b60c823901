// A host KV tier end to end: the shipped agentic scenarios run under every
// write policy with a host pool small enough to evict (the pool's page
// conservation is checked at the end of every run), more host memory finds
// more of the sessions' history, and a deployment that cannot have the tier
// is refused in one line naming the field. Sessions' think times drawn from
// a distribution.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "common/data_path.h"
#include "common/json_util.h"
#include "sim/scenario.h"
#include "sim/simulate.h"
#include "tests/test_util/expect_text.h"

namespace capplan::sim {
namespace {

using test_util::ExpectContains;

// `s` is an error whose message holds every needle.
void ExpectRefused(const Status& s, const std::vector<std::string>& needles) {
  ASSERT_FALSE(s.ok());
  for (const std::string& n : needles) ExpectContains(s.message(), n);
}

nlohmann::json Agentic(const char* file) {
  auto doc = ReadJsonFile(DataPath(std::string("scenarios/agentic/") + file));
  EXPECT_TRUE(doc.ok()) << file;
  return doc.ok() ? *doc : nlohmann::json::object();
}

Result<RunResult> RunDoc(const nlohmann::json& doc) {
  auto sc = ParseScenario(doc, "tiers.json");
  if (!sc.ok()) return sc.status();
  return RunScenario(**sc, RunOptions{});
}

TEST(KvTiers, AgenticScenariosRunUnderEveryWritePolicy) {
  for (const char* file : {"kimi-k2.6-hicache.json", "kimi-k2.6-codex-agents.json"}) {
    for (const char* policy : {"write_through", "write_through_selective", "write_back"}) {
      SCOPED_TRACE(std::string(file) + " " + policy);
      nlohmann::json doc = Agentic(file);
      doc["workload"]["num_sessions"] = 96;
      doc["deployment"]["kv_tiers"] = {{{"tier", "host"}, {"gib_per_gpu", 20}, {"write_policy", policy}}};
      auto run = RunDoc(doc);
      ASSERT_TRUE(run.ok()) << run.status().message();
      EXPECT_GT(run->summary.pools.at(0).host_cache_hit_rate.value_or(0), 0);
      EXPECT_LE(run->summary.pools.at(0).host_kv_peak_gib.value_or(1e9), 20.0);
    }
  }
}

TEST(KvTiers, MoreHostMemoryFindsMoreHistory) {
  nlohmann::json doc = Agentic("kimi-k2.6-codex-agents.json");
  doc["workload"]["num_sessions"] = 96;
  double last = -1;
  for (double gib : {0.0, 10.0, 40.0}) {
    SCOPED_TRACE(gib);
    doc["deployment"]["kv_tiers"] = nlohmann::json::array();
    if (gib > 0) doc["deployment"]["kv_tiers"] = {{{"tier", "host"}, {"gib_per_gpu", gib}}};
    auto run = RunDoc(doc);
    ASSERT_TRUE(run.ok()) << run.status().message();
    const double hit = run->summary.pools.at(0).prefix_cache_hit_rate.value_or(0);
    EXPECT_GT(hit, last);
    last = hit;
    EXPECT_EQ(run->summary.pools.at(0).host_cache_hit_rate.has_value(), gib > 0);
    // The summary echoes the tiers as the scenario writes them.
    const nlohmann::json& echo = run->summary.pools.at(0).deployment;
    EXPECT_EQ(echo.contains("kv_tiers"), gib > 0);
    if (gib > 0) {
      EXPECT_EQ(echo["kv_tiers"][0]["gib_per_gpu"].get<double>(), gib);
    }
  }
  // Null, as `--set deployment.kv_tiers=null` writes it, means no tiers.
  doc["deployment"]["kv_tiers"] = nullptr;
  auto none = RunDoc(doc);
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_FALSE(none->summary.pools.at(0).host_cache_hit_rate.has_value());
}

TEST(KvTiers, DeploymentsWithoutTheTierAreRefused) {
  nlohmann::json doc = Agentic("kimi-k2.6-hicache.json");
  nlohmann::json vllm = doc;
  vllm["deployment"]["engine"] = "vllm";
  ExpectRefused(RunDoc(vllm).status(),
                      {"/deployment/kv_tiers/0/tier", "has no host KV tier", "remove kv_tiers"});
  nlohmann::json old = doc;
  old["deployment"]["engine_version"] = "0.4.5";
  ExpectRefused(RunDoc(old).status(), {"sglang 0.4.5", "has no host KV tier"});
  nlohmann::json off = doc;
  off["deployment"]["prefix_cache"] = false;
  ExpectRefused(RunDoc(off).status(), {"/deployment/kv_tiers", "needs prefix_cache on"});
  nlohmann::json disk = doc;
  disk["deployment"]["kv_tiers"][0]["tier"] = "disk";
  ExpectRefused(RunDoc(disk).status(), {"/deployment/kv_tiers/0/tier", "known: host"});
  nlohmann::json policy = doc;
  policy["deployment"]["kv_tiers"][0]["write_policy"] = "write_around";
  ExpectRefused(RunDoc(policy).status(), {"/deployment/kv_tiers/0/write_policy"});
  nlohmann::json b300 = doc;
  b300["hardware"] = "b300-sxm";
  ExpectRefused(RunDoc(b300).status(), {"memory.host_link_bytes_per_s", "remove kv_tiers"});
}

// Drawn think times: a follow-up turn waits a time from the distribution
// (not one fixed delay), and the same seed draws the same times.
TEST(KvTiers, SessionThinkTimesDrawnFromADistribution) {
  nlohmann::json doc = Agentic("kimi-k2.6-codex-agents.json");
  doc["workload"]["num_sessions"] = 4;
  doc["workload"]["sessions"] = 4;
  doc["workload"]["warmup_requests"] = 0;
  auto sc = ParseScenario(doc, "think.json");
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  const std::vector<int64_t>& think = (*sc)->workload.think_ns;
  ASSERT_EQ(think.size(), 4u * 33);
  std::set<int64_t> distinct(think.begin(), think.end());
  EXPECT_GT(distinct.size(), 100u);
  for (int64_t t : think) EXPECT_EQ(t % 1'000'000, 0);  // whole milliseconds
  auto again = ParseScenario(doc, "think.json");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->workload.think_ns, think);
  nlohmann::json both = doc;
  both["workload"]["think_time_s"] = 2;
  ExpectRefused(ParseScenario(both, "think.json").status(),
                      {"/workload/think_time_ms", "not both"});
}


// The tier's memory joins each GPU-hour at cost.host_memory_usd_per_gib_hour:
// 50 GiB at $0.01 adds $0.50 to the scenario's $2.30; unpriced, the summary
// says the cost leaves it out.
TEST(KvTiers, HostMemoryIsPricedPerGibHourWhenAsked) {
  nlohmann::json doc = Agentic("kimi-k2.6-hicache.json");
  doc["workload"]["num_sessions"] = 8;
  doc["deployment"]["kv_tiers"] = {{{"tier", "host"}, {"gib_per_gpu", 50}}};
  auto unpriced = RunDoc(doc);
  ASSERT_TRUE(unpriced.ok()) << unpriced.status().message();
  EXPECT_DOUBLE_EQ(unpriced->summary.usd_per_gpu_hour.value_or(0), 2.3);
  ExpectContains(unpriced->summary.notes.at("host_memory_cost"), "not in the cost");
  doc["cost"]["host_memory_usd_per_gib_hour"] = 0.01;
  auto priced = RunDoc(doc);
  ASSERT_TRUE(priced.ok()) << priced.status().message();
  EXPECT_DOUBLE_EQ(priced->summary.usd_per_gpu_hour.value_or(0), 2.3 + 50 * 0.01);
  ExpectContains(priced->summary.notes.at("host_memory_cost"), "includes");
}

}  // namespace
}  // namespace capplan::sim
