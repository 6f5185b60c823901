#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/workload/workload.h"
#include "tests/sim/workload/workload_test_util.h"

namespace capplan::sim {
namespace {

constexpr char kTwoSessions[] = R"({"kind": "sessions", "sessions": 1, "num_sessions": 2,
    "turns": {"dist": "fixed", "value": 3}, "system_prompt_tokens": 100,
    "user_tokens": {"dist": "fixed", "value": 10},
    "output_tokens": {"dist": "fixed", "value": 5}, "think_time_s": 0.5, "block_tokens": 16,
    "seed": 3})";

TEST(SessionsTest, TurnsResendTheHistory) {
  auto w = LoadFromText(kTwoSessions);
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_EQ(w->requests.size(), 6u);
  // Turn k: system 100 + k * (10 + 5) of history + 10 new tokens.
  const std::vector<int64_t> inputs{110, 125, 140, 110, 125, 140};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(w->requests[i].input_tokens, inputs[i]) << i;
    EXPECT_EQ(w->requests[i].output_tokens, 5) << i;
    EXPECT_EQ(w->requests[i].arrival_ns, 0) << i;
  }
  // One conversation at a time: session 1 starts when session 0's last turn
  // completes; later turns follow their predecessor after the think time.
  EXPECT_EQ(w->after, (std::vector<int64_t>{-1, 0, 1, 2, 3, 4}));
  EXPECT_EQ(w->think_ns,
            (std::vector<int64_t>{0, 500'000'000, 500'000'000, 0, 500'000'000, 500'000'000}));
  EXPECT_EQ(w->session, (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
}

TEST(SessionsTest, ContentBlocksShareSystemPromptAndHistory) {
  auto w = LoadFromText(kTwoSessions);
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_EQ(w->prefix_block_tokens, 16);
  std::vector<int64_t> a, b;
  // Blocks 0..5 lie wholly inside the 100-token system prompt: every session
  // has them; block 6 (tokens 96..111) already holds session tokens.
  ContentBlocks(*w, 0, 7, &a);
  ContentBlocks(*w, 3, 7, &b);
  ASSERT_EQ(a.size(), 7u);
  for (int j = 0; j < 6; ++j) EXPECT_EQ(a[j], j);
  EXPECT_NE(a[6], b[6]);
  EXPECT_EQ(std::vector<int64_t>(a.begin(), a.begin() + 6),
            std::vector<int64_t>(b.begin(), b.begin() + 6));
  // Turn 1 of a session starts with turn 0's whole stream (prompt + output).
  std::vector<int64_t> t0, t1;
  ContentBlocks(*w, 0, (110 + 5) / 16, &t0);
  ContentBlocks(*w, 1, (110 + 5) / 16, &t1);
  EXPECT_EQ(t0, t1);
}

TEST(SessionsTest, NumRequestsCutsTheSessionsInOrder) {
  std::string s = kTwoSessions;
  s.replace(s.find("\"seed\": 3"), 9, "\"seed\": 3, \"num_requests\": 4");
  auto w = LoadFromText(s);
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_EQ(w->requests.size(), 4u);
  EXPECT_EQ(w->after, (std::vector<int64_t>{-1, 0, 1, 2}));
  EXPECT_EQ(w->requests[3].input_tokens, 110);  // session 1's first turn
}

TEST(SessionsTest, OpenSessionsArriveAtRate) {
  std::string s = kTwoSessions;
  s.replace(s.find("\"sessions\": 1"), 13, "\"session_rate\": 2");
  auto w = LoadFromText(s);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->after[3], -1);  // a new session does not wait for another
  EXPECT_EQ(w->requests[0].arrival_ns, 0);
  EXPECT_GT(w->requests[3].arrival_ns, 0);
}

TEST(SessionsTest, BadInputNamesTheField) {
  std::string s = kTwoSessions;
  s.replace(s.find("0.5"), 3, "-1");
  auto w = LoadFromText(s);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("/workload/think_time_s"), std::string::npos)
      << w.status().message();
  EXPECT_EQ(w.status().message().find('\n'), std::string::npos);
  std::string both = kTwoSessions;
  both.replace(both.find("\"sessions\": 1"), 13, "\"sessions\": 1, \"session_rate\": 2");
  auto w2 = LoadFromText(both);
  ASSERT_FALSE(w2.ok());
  EXPECT_NE(w2.status().message().find("exactly one of"), std::string::npos);
}

}  // namespace
}  // namespace capplan::sim
