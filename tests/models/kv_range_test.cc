// The KV pool's range: memory terms that rest on one public log or on an
// assumption carry a "range" in the engine profile, and the plan gives the
// pool with every such term at the end that gives less KV and more KV.
// Expected pools are hand arithmetic (tests/models/hand_model.h), never the
// library's own numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "models/card.h"
#include "models/engine_profile.h"
#include "models/memory.h"
#include "tests/models/hand_model.h"
#include "tests/models/layouts.h"

namespace capplan::models {
namespace {

using test_layouts::Tp;

nlohmann::json ShippedProfile(const std::string& engine) {
  auto text = ReadFile(DataPath("models/engines/" + engine + ".json"));
  EXPECT_TRUE(text.ok());
  return nlohmann::json::parse(text.ok() ? *text : "{}");
}

// The shipped profile with every range removed except those named in `keep`.
std::vector<EngineProfile> ProfilesKeepingRanges(const std::string& engine,
                                                 const std::vector<std::string>& keep) {
  nlohmann::json doc = ShippedProfile(engine);
  for (nlohmann::json& entry : doc["versions"]) {
    if (!entry.contains("memory")) continue;
    for (auto& [key, term] : entry["memory"].items()) {
      if (!term.is_object() || !term.contains("range")) continue;
      if (std::find(keep.begin(), keep.end(), key) == keep.end()) term.erase("range");
    }
  }
  auto p = ParseEngineProfiles(doc.dump(), engine + "-test.json", nullptr);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : std::vector<EngineProfile>{};
}

// SGLang at TP1 with mem_fraction_static 0.85: KV = (reported - startup) x
// 0.85 - resident, whole tokens (page 1); no communicator at TP1.
int64_t SglangTp1Tokens(const hand::Dims& d, double startup) {
  const double room = (hand::kH200Bytes - startup) * 0.85 -
                      (hand::WeightsPerGpu(d, 1) + hand::SglangResidentExtras(d, 1));
  return static_cast<int64_t>(room / hand::KvBytesPerToken(d, 1, false));
}

TEST(KvRange, OneRangedTermGivesThePoolAtItsEnds) {
  const hand::Dims d = hand::AllDims()[5];
  ASSERT_EQ(d.name, "llama-3.1-8b");
  auto card = LoadModelCard(d.name);
  ASSERT_TRUE(card.ok());
  const std::vector<EngineProfile> profiles = ProfilesKeepingRanges("sglang", {"startup_bytes"});
  ASSERT_FALSE(profiles.empty());
  EngineMemoryOptions opt;
  opt.profile = &profiles.back();
  opt.mem_fraction = 0.85;
  auto p = PlanMemory(*card, Tp(1), PrecisionChoice{}, opt, {hand::kH200Bytes, 0}, 8192);
  ASSERT_TRUE(p.ok()) << p.status().message();
  // startup_bytes 1.20 GiB, range 0 .. 2.40 GiB (+/- its own size): more
  // start-up memory leaves less KV.
  const int64_t point = SglangTp1Tokens(d, hand::kSglangStartup);
  const int64_t lo = SglangTp1Tokens(d, 2 * hand::kSglangStartup);
  const int64_t hi = SglangTp1Tokens(d, 0);
  ASSERT_LT(lo, point);
  ASSERT_LT(point, hi);
  EXPECT_EQ(p->kv_capacity_tokens, point);
  EXPECT_EQ(p->kv_tokens_lo, lo);
  EXPECT_EQ(p->kv_tokens_hi, hi);
  ASSERT_EQ(p->kv_range_terms.size(), 1u);
  const KvRangeTerm& t = p->kv_range_terms[0];
  EXPECT_EQ(t.key, "startup_bytes");
  EXPECT_EQ(t.lo, 0);
  EXPECT_EQ(t.hi, 2576980378);
  EXPECT_EQ(t.kv_tokens_at_lo, hi);
  EXPECT_EQ(t.kv_tokens_at_hi, lo);
  EXPECT_NE(t.source.find("Range 0-2.40 GiB"), std::string::npos) << t.source;
}

TEST(KvRange, TermsWithoutARangeGiveThePointValue) {
  auto card = LoadModelCard("llama-3.1-8b");
  ASSERT_TRUE(card.ok());
  for (const char* engine : {"sglang", "vllm"}) {
    const std::vector<EngineProfile> profiles = ProfilesKeepingRanges(engine, {});
    ASSERT_FALSE(profiles.empty());
    EngineMemoryOptions opt;
    opt.engine = engine;
    opt.profile = &profiles.back();
    auto p = PlanMemory(*card, Tp(8), PrecisionChoice{}, opt, {hand::kH200Bytes, 0}, 8192);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_GT(p->kv_capacity_tokens, 0);
    EXPECT_EQ(p->kv_tokens_lo, p->kv_capacity_tokens) << engine;
    EXPECT_EQ(p->kv_tokens_hi, p->kv_capacity_tokens) << engine;
    EXPECT_TRUE(p->kv_range_terms.empty()) << engine;
  }
}

// A range on a term this plan does not use (the TP1 communicator at TP8,
// NVLS buffers with NVLS off) neither widens the pool nor is listed.
TEST(KvRange, OnlyTermsOfThePlanWidenIt) {
  auto card = LoadModelCard("llama-3.1-8b");
  ASSERT_TRUE(card.ok());
  const std::vector<EngineProfile> profiles =
      ProfilesKeepingRanges("sglang", {"dist_init_tp1_bytes", "nvls_bytes"});
  ASSERT_FALSE(profiles.empty());
  EngineMemoryOptions opt;
  opt.profile = &profiles.back();
  opt.nvls = false;
  auto p = PlanMemory(*card, Tp(8), PrecisionChoice{}, opt, {hand::kH200Bytes, 0}, 8192);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->kv_range_terms.empty());
  EXPECT_EQ(p->kv_tokens_lo, p->kv_capacity_tokens);
  EXPECT_EQ(p->kv_tokens_hi, p->kv_capacity_tokens);
  opt.nvls = true;
  auto on = PlanMemory(*card, Tp(8), PrecisionChoice{}, opt, {hand::kH200Bytes, 0}, 8192);
  ASSERT_TRUE(on.ok()) << on.status().message();
  ASSERT_EQ(on->kv_range_terms.size(), 1u);
  EXPECT_EQ(on->kv_range_terms[0].key, "nvls_bytes");
  EXPECT_LT(on->kv_tokens_lo, on->kv_capacity_tokens);
  EXPECT_GT(on->kv_tokens_hi, on->kv_capacity_tokens);
}

// The shipped profiles: the SGLang 0.4.5.post3 DeepSeek-R1 8xH200 log's pool
// (654,280 tokens, tests/models/capacity_validation_test.cc) lies inside the
// range, and a boolean assumption (vLLM's MLA copies) moves an MLA pool.
TEST(KvRange, ShippedRangesHoldThePublicLogAndBooleans) {
  auto card = LoadModelCard("deepseek-v3");
  ASSERT_TRUE(card.ok());
  EngineMemoryOptions opt;
  opt.version = "0.4.5.post3";
  opt.page_size = 1;
  auto p = PlanMemory(*card, Tp(8), PrecisionChoice{}, opt, {hand::kH200Bytes, 0}, 4096);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_LT(p->kv_tokens_lo, 654280);
  EXPECT_GT(p->kv_tokens_hi, 654280);
  opt = EngineMemoryOptions{};
  opt.engine = "vllm";
  opt.nvls = false;
  auto v = PlanMemory(*card, Tp(8), PrecisionChoice{}, opt, {hand::kH200Bytes, 0}, 4096);
  ASSERT_TRUE(v.ok()) << v.status().message();
  bool mla = false;
  for (const KvRangeTerm& t : v->kv_range_terms) {
    if (t.key != "mla_absorbed_copies") continue;
    mla = true;
    EXPECT_EQ(t.kv_tokens_at_lo, v->kv_capacity_tokens);  // false is the value
    EXPECT_LT(t.kv_tokens_at_hi, v->kv_capacity_tokens);
  }
  EXPECT_TRUE(mla);
}

std::string WithStartupRange(const std::string& range) {
  auto text = ReadFile(DataPath("models/engines/sglang.json"));
  EXPECT_TRUE(text.ok());
  std::string t = text.ok() ? *text : "";
  const std::string key = "\"range\": [0, 2576980378]";
  const auto at = t.find(key);
  EXPECT_NE(at, std::string::npos);
  if (at != std::string::npos) t.replace(at, key.size(), "\"range\": " + range);
  return t;
}

void ExpectOneLineError(const std::string& text, const std::string& needle) {
  auto r = ParseEngineProfiles(text, "sglang.json", nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUsage);
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << r.status().message();
}

TEST(KvRange, MalformedRangesAreOneLineErrorsWithTheirPath) {
  const std::string path = "sglang.json: /versions/0/memory/startup_bytes/range: ";
  // lo above the value (1288490189).
  ExpectOneLineError(WithStartupRange("[1300000000, 2576980378]"),
                     path + "must hold lo <= value <= hi");
  ExpectOneLineError(WithStartupRange("[0, 1000]"), path + "must hold lo <= value <= hi");
  ExpectOneLineError(WithStartupRange("[0]"), path + "must be [lo, hi] of numbers");
  ExpectOneLineError(WithStartupRange("[0, \"2 GiB\"]"), path + "must be [lo, hi] of numbers");
  // An engine rule takes no range.
  auto text = ReadFile(DataPath("models/engines/sglang.json"));
  ASSERT_TRUE(text.ok());
  std::string t = *text;
  const std::string rule = "\"vocab_pad_multiple\": {\"value\": 64, ";
  ASSERT_NE(t.find(rule), std::string::npos);
  t.replace(t.find(rule), rule.size(), rule + "\"range\": [32, 128], ");
  ExpectOneLineError(t, "sglang.json: /versions/0/memory/vocab_pad_multiple/range: only terms");
}

TEST(KvRange, ARangeNamesItsOriginAndBelongsWithItsValue) {
  nlohmann::json doc = ShippedProfile("sglang");
  nlohmann::json& startup = doc["versions"][0]["memory"]["startup_bytes"];
  const nlohmann::json source = startup["source"];
  startup["source"] = "1.20 GiB from one log";
  auto r = ParseEngineProfiles(doc.dump(), "sglang.json", nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/versions/0/memory/startup_bytes/source: a term with a "
                                      "range says in its source where the range comes from"),
            std::string::npos)
      << r.status().message();
  // A later entry that restates the value without a range drops the range.
  startup["source"] = source;
  doc["versions"][2]["memory"]["startup_bytes"] = {{"value", 1000000000},
                                                   {"source", "a later reading"}};
  auto later = ParseEngineProfiles(doc.dump(), "sglang.json", nullptr);
  ASSERT_TRUE(later.ok()) << later.status().message();
  EXPECT_EQ(later->front().memory_ranges.count("startup_bytes"), 1u);
  EXPECT_EQ(later->back().memory_ranges.count("startup_bytes"), 0u);
  EXPECT_EQ(later->back().memory.startup_bytes, 1000000000);
}

}  // namespace
}  // namespace capplan::models
