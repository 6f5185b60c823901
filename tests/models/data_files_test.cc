// The shipped data files (dtypes.json, engine_rules.json) parse, and a
// constant without its source is rejected.
#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "models/dtype_facts.h"
#include "models/engine_rules.h"

namespace capplan {
namespace {

TEST(DataFiles, ShippedFilesLoad) {
  auto f = GetDtypeFacts();
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->bits.at(Dtype::kInt4), 4);
  EXPECT_EQ((*f)->dsa_fp8_scale_block, 128);
  auto r = GetEngineRules();
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string v;
  auto rule = FindEngineRule(**r, "sglang", "0.5.2", &v);
  ASSERT_TRUE(rule.ok());
  EXPECT_EQ((*rule)->name, "older");
  EXPECT_EQ(FindEngineRule(**r, "sglang", "", &v).value()->name, "newer");
  EXPECT_EQ(FindEngineRule(**r, "sglang", "0.5.x", &v).status().code(), StatusCode::kUsage);
}

TEST(DataFiles, ConstantWithoutSourceIsRejected) {
  auto text = ReadFile(DataPath("models/engine_rules.json"));
  ASSERT_TRUE(text.ok());
  std::string t = *text;
  const auto p = t.find("\"utilization_source\"");
  ASSERT_NE(p, std::string::npos);
  t.replace(p, 20, "\"utilisation_source\"");
  auto r = ParseEngineRules(t, "rules.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("rules.json: /vllm/rules/0/"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace capplan
