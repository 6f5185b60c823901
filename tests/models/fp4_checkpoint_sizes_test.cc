// The 4-bit-float checkpoints weigh what their publishers say
// (tests/data/published_checkpoint_sizes.json, each size with its source):
// the card's bytes, values and scales of every tensor, rounded as published.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "common/data_path.h"
#include "common/json_util.h"
#include "models/card.h"
#include "models/memory.h"
#include "tests/models/layouts.h"

namespace capplan::models {
namespace {

using test_layouts::Tp;

double Unit(const std::string& unit) {
  if (unit == "GiB") return 1024.0 * 1024.0 * 1024.0;
  if (unit == "GB") return 1e9;
  ADD_FAILURE() << "unknown unit " << unit;
  return 1;
}

TEST(PublishedCheckpointSizes, CardsWeighWhatThePublishersSay) {
  auto doc = ReadJsonFile(DataPath("tests/data/published_checkpoint_sizes.json"));
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  ASSERT_FALSE((*doc)["checkpoints"].empty());
  for (const auto& c : (*doc)["checkpoints"]) {
    const std::string name = c["checkpoint"];
    ASSERT_FALSE(c["source"].get<std::string>().empty()) << name;
    auto card = LoadModelCard(DataPath(c["card"].get<std::string>()));
    ASSERT_TRUE(card.ok()) << name << ": " << card.status().message();
    auto w = ComputeWeights(*card, Tp(1), PrecisionChoice{});
    ASSERT_TRUE(w.ok()) << name << ": " << w.status().message();
    const auto& pub = c["published"];
    const double scale = std::pow(10.0, pub["decimals"].get<int>());
    const double ours = std::round(double(w->bytes_per_gpu) / Unit(pub["unit"]) * scale) / scale;
    EXPECT_DOUBLE_EQ(ours, pub["value"].get<double>())
        << name << ": " << w->bytes_per_gpu << " B";
  }
}

// gpt-oss-120b by hand: 116.83B parameters at TP1, 65,248,815,744 B
// (MXFP4 experts 60,993,699,840 B, the rest BF16) = 60.768 GiB, which the
// model card rounds to 60.8.
TEST(PublishedCheckpointSizes, GptOss120bBytes) {
  auto card = LoadModelCard(DataPath("tests/data/hf/gpt-oss-120b"));
  ASSERT_TRUE(card.ok()) << card.status().message();
  auto w = ComputeWeights(*card, Tp(1), PrecisionChoice{});
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->bytes_per_gpu, 65248815744LL);
}

}  // namespace
}  // namespace capplan::models
