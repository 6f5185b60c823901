#include "sim/workload/timestamp.h"

#include <gtest/gtest.h>

namespace capplan::sim {
namespace {

TEST(TimestampTest, DaysFromCivil) {
  EXPECT_EQ(DaysFromCivil(1970, 1, 1), 0);
  EXPECT_EQ(DaysFromCivil(2000, 3, 1), 11017);
  EXPECT_EQ(DaysFromCivil(1969, 12, 31), -1);
  // 2023-11-16 is 1700092800 s after the epoch (date -u -d 2023-11-16 +%s).
  EXPECT_EQ(DaysFromCivil(2023, 11, 16) * 86400, 1700092800);
}

TEST(TimestampTest, Azure2023SevenFractionalDigitsExact) {
  auto t = ParseCivilTimeNs("2023-11-16 18:17:03.9799600");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(*t, (1700092800LL + 18 * 3600 + 17 * 60 + 3) * 1'000'000'000LL + 979'960'000LL);
}

TEST(TimestampTest, Azure2024OffsetsAndMixedPrecision) {
  auto a = ParseCivilTimeNs("2024-05-14 00:00:04+00:00");
  auto b = ParseCivilTimeNs("2024-05-14 00:00:04.001163+00:00");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*b - *a, 1'163'000);
  // The same instant written in another zone.
  auto c = ParseCivilTimeNs("2024-05-14T02:00:04+02:00");
  auto d = ParseCivilTimeNs("2024-05-13 23:30:04-0030");
  auto z = ParseCivilTimeNs("2024-05-14 00:00:04Z");
  ASSERT_TRUE(c.ok() && d.ok() && z.ok());
  EXPECT_EQ(*c, *a);
  EXPECT_EQ(*d, *a);
  EXPECT_EQ(*z, *a);
}

TEST(TimestampTest, RejectsMalformed) {
  for (const char* bad : {"2023-11-16", "2023-13-01 00:00:00", "2023-02-29 00:00:00",
                          "2023-11-16 24:00:00", "2023-11-16 18:17:03.", "2023-11-16 18:17:03x",
                          "2023-11-16 18:17:03+5", "16/11/2023 18:17:03"}) {
    auto t = ParseCivilTimeNs(bad);
    EXPECT_FALSE(t.ok()) << bad;
    if (!t.ok()) {
      EXPECT_NE(t.status().message().find(bad), std::string::npos);
    }
  }
  EXPECT_TRUE(ParseCivilTimeNs("2024-02-29 00:00:00").ok());  // leap year
}

TEST(TimestampTest, DecimalNs) {
  EXPECT_EQ(*ParseDecimalNs("5", 9), 5'000'000'000);
  EXPECT_EQ(*ParseDecimalNs("0.000000001", 9), 1);
  EXPECT_EQ(*ParseDecimalNs("12.5", 6), 12'500'000);             // ms
  EXPECT_EQ(*ParseDecimalNs("1.1234567891", 9), 1'123'456'789);  // truncates below 1 ns
  // A value a double cannot hold exactly in ns: 10^7 s + 1 ns.
  EXPECT_EQ(*ParseDecimalNs("10000000.000000001", 9), 10'000'000'000'000'001);
  for (const char* bad : {"", ".", "-1", "1e3", "1,5", "99999999999999999999"}) {
    EXPECT_FALSE(ParseDecimalNs(bad, 9).ok()) << bad;
  }
}

}  // namespace
}  // namespace capplan::sim
