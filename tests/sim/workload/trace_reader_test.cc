#include "sim/workload/trace_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "common/data_path.h"

namespace capplan::sim {
namespace {

std::string Sample(const char* name) { return DataPath("scenarios/traces/") + name; }

Result<TraceData> ParseText(const std::string& format, const std::string& text,
                            TraceReadOptions options = {}) {
  return ParseTraceText(format, text, "t.csv", options);
}

TEST(TraceReaderTest, Azure2023Sample) {
  auto d = ReadTraceFile("azure_2023", Sample("azure_2023_sample.csv"), {});
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->rows.size(), 40u);
  // Row 1: 2023-11-16 18:07:11.0094734,349,169; row 2: ...11.0202617.
  EXPECT_EQ(d->rows[1].timestamp_ns - d->rows[0].timestamp_ns, 10'788'300);
  EXPECT_EQ(d->rows[0].input_tokens, 349);
  EXPECT_EQ(d->rows[0].output_tokens, 169);
  EXPECT_EQ(d->rows[0].line, 2);
  EXPECT_TRUE(d->hash_ids.empty());
}

TEST(TraceReaderTest, Azure2024SampleCrossesMidnightWithMixedPrecision) {
  auto d = ReadTraceFile("azure_2024", Sample("azure_2024_sample.csv"), {});
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->rows.size(), 40u);
  for (size_t i = 1; i < d->rows.size(); ++i) {
    EXPECT_GE(d->rows[i].timestamp_ns, d->rows[i - 1].timestamp_ns) << "line " << i + 2;
  }
  // 23:59:55.057409 on the 13th to 00:00:09.070009 on the 14th.
  EXPECT_EQ(d->rows.back().timestamp_ns - d->rows.front().timestamp_ns, 14'012'600'000);
}

TEST(TraceReaderTest, MooncakeSampleKeepsHashIds) {
  auto d = ReadTraceFile("mooncake", Sample("mooncake_sample.jsonl"), {});
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->rows.size(), 30u);
  ASSERT_EQ(d->hash_ids.size(), 30u);
  EXPECT_EQ(d->rows[0].timestamp_ns, 0);
  EXPECT_EQ(d->rows[1].timestamp_ns, 344'000'000);  // 344 ms
  for (size_t i = 0; i < d->rows.size(); ++i) {
    // One id per 512-token block, as in the real traces.
    EXPECT_EQ(static_cast<int64_t>(d->hash_ids[i].size()), (d->rows[i].input_tokens + 511) / 512);
    EXPECT_EQ(d->hash_ids[i][0], 0);  // the shared system prompt
  }
}

TEST(TraceReaderTest, BurstGptFilters) {
  auto all = ReadTraceFile("burstgpt", Sample("burstgpt_sample.csv"), {"", false});
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(all->rows.size(), 36u);
  EXPECT_EQ(all->lengths_raised, 4);  // failures kept: 0 response tokens raised to 1
  auto ok_only = ReadTraceFile("burstgpt", Sample("burstgpt_sample.csv"), {});
  ASSERT_TRUE(ok_only.ok());
  EXPECT_EQ(ok_only->rows.size(), 32u);
  EXPECT_EQ(ok_only->rows_dropped, 4);
  // vLLM's loader: GPT-4 rows with a response.
  auto gpt4 = ReadTraceFile("burstgpt", Sample("burstgpt_sample.csv"), {"GPT-4", true});
  ASSERT_TRUE(gpt4.ok());
  EXPECT_GT(gpt4->rows.size(), 0u);
  EXPECT_LT(gpt4->rows.size(), 32u);
  EXPECT_EQ(gpt4->rows.size() + gpt4->rows_dropped, 36u);
  EXPECT_EQ(all->rows[0].timestamp_ns, 12'000'000'000);  // "12,ChatGPT,..."
}

TEST(TraceReaderTest, CsvDetailsCrlfQuotesColumnOrderBom) {
  auto d = ParseText("azure_2023",
                     "\xEF\xBB\xBFGeneratedTokens,\"TIMESTAMP\",ContextTokens\r\n"
                     "7,\"2023-11-16 18:00:00.0000001\",12\r\n\r\n");
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->rows.size(), 1u);
  EXPECT_EQ(d->rows[0].input_tokens, 12);
  EXPECT_EQ(d->rows[0].output_tokens, 7);
  EXPECT_EQ(d->rows[0].timestamp_ns % 1000, 100);
}

TEST(TraceReaderTest, MalformedRowsNameFileAndLine) {
  struct Case {
    const char* format;
    const char* text;
    const char* want;
  } cases[] = {
      {"azure_2023", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00.1,5\n",
       "t.csv:2: expected 3 comma-separated fields, got 2"},
      {"azure_2023", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,5,1\nxx,5,1\n",
       "t.csv:3: column 'TIMESTAMP': bad timestamp 'xx'"},
      {"azure_2024", "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-13 00:00:00+00:00,-5,1\n",
       "t.csv:2: column 'ContextTokens': expected a token count in [0, 1000000000], got '-5'"},
      {"azure_2023", "TIMESTAMP,ContextToken,GeneratedTokens\n",
       "t.csv:1: header lacks column 'ContextTokens'; did you mean 'ContextToken'"},
      {"burstgpt",
       "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
       "1,GPT-4,10,abc,10,API log\n",
       "t.csv:2: column 'Response tokens'"},
      {"burstgpt",
       "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
       "-3,GPT-4,10,1,11,API log\n",
       "t.csv:2: column 'Timestamp': expected a non-negative decimal number"},
      {"mooncake", "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n{oops\n",
       "t.csv:2: line 1, column 2: malformed JSON"},
      {"mooncake", "{\"timestamp\": 0, \"input_length\": 5}\n",
       "t.csv:1: missing field 'output_length'"},
      {"mooncake", "{\"timestamp\": 0, \"input_length\": 5.5, \"output_length\": 1}\n",
       "t.csv:1: field 'input_length' must be an integer"},
      {"mooncake", "{\"timestamp\": \"0\", \"input_length\": 5, \"output_length\": 1}\n",
       "t.csv:1: field 'timestamp' must be a number"},
      // 513 prompt tokens fill two 512-token blocks at most.
      {"mooncake",
       "{\"timestamp\": 0, \"input_length\": 513, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n",
       "t.csv:1: field 'hash_ids' has 3 blocks of 512 tokens, more than input_length 513 holds "
       "(2)"},
  };
  for (const auto& c : cases) {
    auto d = ParseText(c.format, c.text);
    ASSERT_FALSE(d.ok()) << c.text;
    EXPECT_NE(d.status().message().find(c.want), std::string::npos)
        << c.text << " -> " << d.status().message();
  }
}

// Rows in the published shape are read without a JSON document; the same
// rows with one more field go through the JSON reader. Both give the same
// data, row for row, over rows of every width, spacing and field order,
// and rows the fast reader declines (fractions, 19-digit ids, escapes)
// read as the JSON reader reads them.
TEST(TraceReaderTest, MooncakeRowsReadAlikeWithAndWithoutTheJsonReader) {
  std::mt19937_64 rng(11);
  std::string fast, slow;
  for (int i = 0; i < 3000; ++i) {
    const int64_t in = static_cast<int64_t>(rng() % 20000);
    const int64_t blocks = in == 0 ? 0 : static_cast<int64_t>(rng() % ((in + 511) / 512 + 1));
    std::string ids = "[";
    for (int64_t b = 0; b < blocks; ++b) {
      const uint64_t id = rng() % 3 == 0 ? rng() % 10 : rng() >> (i % 89 == 0 ? 1 : 8);
      ids += (b ? ", " : "") + std::to_string(id);
    }
    ids += "]";
    const std::string ts =
        i % 97 == 0 ? "12.5"
                    : std::to_string(rng() % 4 ? rng() % 100'000'000 : rng() % 9'000'000'000'000);
    std::vector<std::string> fields = {"\"timestamp\": " + ts,
                                       "\"input_length\":" + std::to_string(in),
                                       "\"output_length\" : " + std::to_string(rng() % 3000)};
    if (rng() % 4) fields.push_back("\"hash_ids\": " + ids);
    std::shuffle(fields.begin(), fields.end(), rng);
    std::string row = "{";
    for (size_t f = 0; f < fields.size(); ++f) row += (f ? ", " : "") + fields[f];
    if (i % 101 == 0) row += ", \"h\\u0061sh\": 1";
    fast += (rng() % 2 ? " " : "") + row + "}\n";
    slow += row + ", \"extra\": {\"a\": [1]}}\n";
  }
  auto a = ParseText("mooncake", fast);
  auto b = ParseText("mooncake", slow);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_EQ(a->rows.size(), b->rows.size());
  for (size_t i = 0; i < a->rows.size(); ++i) {
    EXPECT_EQ(a->rows[i].timestamp_ns, b->rows[i].timestamp_ns) << "line " << i + 1;
    EXPECT_EQ(a->rows[i].input_tokens, b->rows[i].input_tokens) << "line " << i + 1;
    EXPECT_EQ(a->rows[i].output_tokens, b->rows[i].output_tokens) << "line " << i + 1;
    EXPECT_EQ(a->rows[i].line, b->rows[i].line);
  }
  EXPECT_EQ(a->hash_ids, b->hash_ids);
  EXPECT_EQ(a->lengths_raised, b->lengths_raised);
  EXPECT_GT(a->lengths_raised, 0);
}

TEST(TraceReaderTest, MissingFileAndUnknownFormat) {
  auto d = ReadTraceFile("mooncake", "/no/such/trace.jsonl", {});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_NE(d.status().message().find("/no/such/trace.jsonl"), std::string::npos);
  auto f = ParseText("mooncak", "");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("did you mean 'mooncake'"), std::string::npos);
}

TEST(TraceReaderTest, MooncakeFractionalMillisecondsExact) {
  auto d =
      ParseText("mooncake", "{\"timestamp\": 1.25, \"input_length\": 5, \"output_length\": 2}\n");
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->rows[0].timestamp_ns, 1'250'000);
}

}  // namespace
}  // namespace capplan::sim
