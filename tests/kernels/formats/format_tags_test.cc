// The kernels keep compile-time tags for the formats they have code for
// (kernels::KvDtype, kernels::GemmWeightFormat); each must name a row of the
// format table (hw/formats.json) and agree with its facts, so the table stays
// the one owner of what a format is.
#include <gtest/gtest.h>

#include "hw/formats.h"
#include "kernels/attention/paged_kv.h"
#include "kernels/gemm/gemm_cost.h"

namespace capplan::kernels {
namespace {

TEST(FormatTags, KvTagsAreKvRowsOfTheirWidth) {
  for (KvDtype d : {KvDtype::kBf16, KvDtype::kFp8}) {
    auto id = hw::ParseFormat(KvDtypeName(d));
    ASSERT_TRUE(id.ok()) << id.status().message();
    const hw::NumberFormat& row = hw::Formats().Row(*id);
    EXPECT_TRUE(row.kv) << row.name;
    EXPECT_EQ(KvElemBytes(d) * 8, row.bits) << row.name;
  }
}

TEST(FormatTags, GemmTagsAreWeightRows) {
  for (GemmWeightFormat f : {GemmWeightFormat::kBf16, GemmWeightFormat::kFp8PerTensor,
                             GemmWeightFormat::kFp8Block128, GemmWeightFormat::kInt4}) {
    auto id = hw::ParseFormat(GemmWeightFormatName(f));
    ASSERT_TRUE(id.ok()) << id.status().message();
    EXPECT_TRUE(hw::Formats().Row(*id).weights) << GemmWeightFormatName(f);
  }
  // kFp8Block128 is the FP8 row's own recipe; kInt4 the INT4 row's element.
  const hw::NumberFormat& fp8 = hw::Formats().Row(*hw::ParseFormat("fp8_block"));
  EXPECT_EQ(fp8.scale.block_rows, 128);
  EXPECT_EQ(fp8.scale.block_cols, 128);
  EXPECT_EQ(hw::Formats().Row(*hw::ParseFormat("int4")).bits, 4);
}

}  // namespace
}  // namespace capplan::kernels
