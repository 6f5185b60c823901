// The shipped data files (hw/formats.json, models/engines/*.json) parse, a value
// without its source is rejected, and versions resolve to the right entry.
#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "models/dtype_facts.h"
#include "models/engine_profile.h"
#include "tests/test_util/expect_text.h"

namespace capplan::models {
namespace {

using test_util::ExpectContains;
using test_util::ExpectErrorContains;

TEST(DataFiles, ShippedFilesLoad) {
  auto f = GetDtypeFacts();
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->Bits(Dtype::kInt4), 4);
  EXPECT_EQ((*f)->dsa_fp8_scale_block, 128);
  EXPECT_EQ(EngineNames(), (std::vector<std::string>{"sglang", "vllm"}));
  for (const std::string& e : EngineNames()) {
    auto r = ResolveEngine(e, "");
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(r->note.empty()) << e << ": the latest version is an entry of its own";
  }
}

TEST(DataFiles, VersionsResolveToTheLatestEntryAtOrBeforeThem) {
  auto exact = ResolveEngine("sglang", "0.4.6");
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->profile->version, "0.4.6");
  EXPECT_TRUE(exact->note.empty());
  // A patch build takes its release's rules.
  auto post = ResolveEngine("sglang", "0.4.5.post3");
  ASSERT_TRUE(post.ok());
  EXPECT_EQ(post->profile->version, "0.4.5");
  auto older = ResolveEngine("sglang", "0.4.4.post1");
  ASSERT_TRUE(older.ok());
  EXPECT_EQ(older->profile->version, "0.4.0");
  ExpectContains(older->note, "using the rules of 0.4.0");
  auto between = ResolveEngine("sglang", "0.5.2");
  ASSERT_TRUE(between.ok());
  EXPECT_EQ(between->profile->version, "0.4.6");
  auto newer = ResolveEngine("vllm", "0.20.1");
  ASSERT_TRUE(newer.ok());
  EXPECT_EQ(newer->profile->version, "0.19.0");
  // Entries inherit what they do not change: 0.19.0 only moves max_num_seqs
  // and async scheduling.
  EXPECT_EQ(newer->profile->defaults.page_size, 16);
  EXPECT_EQ(newer->profile->defaults.max_running_min, 1024);
}

TEST(DataFiles, UnknownVersionsListTheKnownOnes) {
  auto old = ResolveEngine("sglang", "0.3.9");
  ExpectErrorContains(old, StatusCode::kUsage, "known sglang versions: 0.4.0, 0.4.5, 0.4.6, 0.5.4");
  auto bad = ResolveEngine("sglang", "0.4.x");
  ExpectErrorContains(bad, "known sglang versions");
  ExpectContains(bad.status().message(), "did you mean '0.4.0'");
  EXPECT_EQ(bad.status().message().find('\n'), std::string::npos);
  auto engine = ResolveEngine("sglng", "");
  ExpectErrorContains(engine, "did you mean 'sglang'");
}

TEST(DataFiles, ValueWithoutSourceIsRejected) {
  auto text = ReadFile(DataPath("models/engines/vllm.json"));
  ASSERT_TRUE(text.ok());
  std::string t = *text;
  const std::string key = "\"utilization_default\": {\"value\": 0.9, \"source\"";
  const auto p = t.find(key);
  ASSERT_NE(p, std::string::npos);
  t.replace(p, key.size(), "\"utilization_default\": {\"value\": 0.9, \"sauce\"");
  auto r = ParseEngineProfiles(t, "vllm.json", nullptr);
  ExpectErrorContains(r, "vllm.json: /versions/0/memory/utilization_default");
}

TEST(DataFiles, EntriesMustGrowInVersion) {
  auto text = ReadFile(DataPath("models/engines/sglang.json"));
  ASSERT_TRUE(text.ok());
  std::string t = *text;
  const auto p = t.find("\"version\": \"0.5.4\"");
  ASSERT_NE(p, std::string::npos);
  t.replace(p, 18, "\"version\": \"0.4.1\"");
  auto r = ParseEngineProfiles(t, "sglang.json", nullptr);
  ExpectErrorContains(r, "must be newer than the entry before it");
}

}  // namespace
}  // namespace capplan::models
