#include "sim/sweep/shard.h"

#include <map>

#include <gtest/gtest.h>

namespace capplan::sim::sweep {
namespace {

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ShardTest, DefaultIsOneShard) {
  auto s = ResolveShard(std::nullopt, std::nullopt, Env({}));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->count, 1);
  EXPECT_TRUE(s->Owns(7));
}

TEST(ShardTest, FlagsSelectEveryNthPoint) {
  auto s = ResolveShard(1, 3, Env({{"SLURM_ARRAY_TASK_ID", "0"}}));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->source, "flags");
  EXPECT_FALSE(s->Owns(0));
  EXPECT_TRUE(s->Owns(1));
  EXPECT_TRUE(s->Owns(4));
  EXPECT_FALSE(s->Owns(5));
}

TEST(ShardTest, SlurmArrayIsRebasedOnItsMinimum) {
  auto s = ResolveShard(std::nullopt, std::nullopt,
                        Env({{"SLURM_ARRAY_TASK_ID", "5"},
                             {"SLURM_ARRAY_TASK_MIN", "1"},
                             {"SLURM_ARRAY_TASK_COUNT", "8"}}));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->index, 4);
  EXPECT_EQ(s->count, 8);
  EXPECT_EQ(s->source, "slurm");
}

TEST(ShardTest, KubernetesIndexNeedsACount) {
  auto missing = ResolveShard(std::nullopt, std::nullopt, Env({{"JOB_COMPLETION_INDEX", "2"}}));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--shard-count"), std::string::npos);
  auto s = ResolveShard(std::nullopt, std::nullopt,
                        Env({{"JOB_COMPLETION_INDEX", "2"}, {"CAPPLAN_SHARD_COUNT", "4"}}));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->source, "kubernetes");
  auto f = ResolveShard(std::nullopt, 4, Env({{"JOB_COMPLETION_INDEX", "3"}}));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->index, 3);
}

TEST(ShardTest, RejectsOutOfRangeAndGarbage) {
  EXPECT_FALSE(ResolveShard(3, 3, Env({})).ok());
  EXPECT_FALSE(ResolveShard(0, 0, Env({})).ok());
  EXPECT_FALSE(ResolveShard(-1, 2, Env({})).ok());
  auto g = ResolveShard(std::nullopt, std::nullopt,
                        Env({{"SLURM_ARRAY_TASK_ID", "x1"}, {"SLURM_ARRAY_TASK_COUNT", "2"}}));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("SLURM_ARRAY_TASK_ID"), std::string::npos);
}

}  // namespace
}  // namespace capplan::sim::sweep
