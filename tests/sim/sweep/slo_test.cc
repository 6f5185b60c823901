#include "sim/sweep/slo.h"

#include <gtest/gtest.h>

namespace capplan::sim::sweep {
namespace {

// p95 wherever p90 and p99 are: the SLO names it, the summary holds it.
TEST(SloTest, P95IsAMetricLikeP90AndP99) {
  auto a = ParseSlo("p95_ttft_ms<=2000");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->metric, "p95_ttft_ms");
  auto b = ParseSlo("tpot_p95_ms<=50");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->metric, "p95_tpot_ms");
  schema::RunSummary s;
  s.ttft.p95 = 1500;
  EXPECT_EQ(schema::Metric(s, "p95_ttft_ms"), 1500.0);
}

TEST(SloTest, BothSpellingsMapToTheSummaryKey) {
  auto a = ParseSlo("ttft_p90_ms<=2000");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->metric, "p90_ttft_ms");
  EXPECT_EQ(a->op, SloOp::kLe);
  EXPECT_EQ(a->bound, 2000);
  auto b = ParseSlo(" p90_tpot_ms < 50.5 ");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->metric, "p90_tpot_ms");
  EXPECT_EQ(b->op, SloOp::kLt);
  EXPECT_DOUBLE_EQ(b->bound, 50.5);
  auto c = ParseSlo("output_throughput_per_gpu>=1000");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->upper);
  auto d = ParseSlo("e2el_median_ms<1e4");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->metric, "median_e2el_ms");
  EXPECT_TRUE(ParseSlo("request_throughput>2").ok());
}

void ExpectUsage(const std::string& text, const std::string& needle) {
  auto r = ParseSlo(text);
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(r.status().code(), StatusCode::kUsage);
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(SloTest, RejectsBadSlos) {
  ExpectUsage("ttft_p97_ms<=2000", "did you mean 'ttft_p9");
  ExpectUsage("ttft_p90_ms", "expected METRIC<=VALUE");
  ExpectUsage("<=5", "expected METRIC<=VALUE");
  ExpectUsage("ttft_p90_ms==5", "unknown operator '=='");
  ExpectUsage("ttft_p90_ms=>5", "unknown operator '=>'");
  ExpectUsage("ttft_p90_ms<=fast", "not a finite non-negative number");
  ExpectUsage("ttft_p90_ms<=", "not a finite non-negative number");
  ExpectUsage("ttft_p90_ms<=-1", "not a finite non-negative number");
  ExpectUsage("ttft_p90_ms<=12ms", "not a finite non-negative number");
  ExpectUsage("ttft_p90_ms>=100", "upper bound; write ttft_p90_ms<=100");
  ExpectUsage("output_throughput_per_gpu<=100", "lower bound");
}

TEST(SloTest, ChecksAgainstASummary) {
  std::vector<Slo> slos = {ParseSlo("ttft_p90_ms<=200").value(),
                           ParseSlo("tpot_p90_ms<20").value(),
                           ParseSlo("output_throughput_per_gpu>=100").value()};
  nlohmann::json s = {{"p90_ttft_ms", 150.0}, {"p90_tpot_ms", 20.0},
                      {"output_throughput_per_gpu", 120}};
  auto checks = CheckSlos(slos, schema::FromJson(s, "s.json").value());
  ASSERT_TRUE(checks.ok());
  EXPECT_TRUE((*checks)[0].met);
  EXPECT_DOUBLE_EQ((*checks)[0].slack, 0.25);
  EXPECT_FALSE((*checks)[1].met);  // strict bound
  EXPECT_TRUE((*checks)[2].met);
  EXPECT_DOUBLE_EQ((*checks)[2].slack, 0.2);
  EXPECT_FALSE(AllMet(*checks));
  EXPECT_EQ(DescribeCheck((*checks)[1]), "tpot_p90_ms=20 >= 20");
  s.erase("p90_tpot_ms");
  auto missing = CheckSlos(slos, schema::FromJson(s, "s.json").value());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("p90_tpot_ms"), std::string::npos);
}

}  // namespace
TEST(SloTest, PessimisticChecksTheIntervalsUnfavourableEnd) {
  auto ttft = ParseSlo("ttft_p90_ms<=100");
  auto thr = ParseSlo("output_throughput>=1000");
  ASSERT_TRUE(ttft.ok() && thr.ok());
  const std::vector<Slo> slos = {*ttft, *thr};
  schema::RunSummary s;
  s.ttft.p90 = 90.0;
  s.output_throughput = 1200.0;
  s.intervals["p90_ttft_ms"] = {60.0, 150.0};
  s.intervals["output_throughput"] = {900.0, 1500.0};
  auto plain = CheckSlos(slos, s);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(AllMet(*plain));
  auto pess = CheckSlos(slos, s, /*pessimistic=*/true);
  ASSERT_TRUE(pess.ok());
  EXPECT_FALSE((*pess)[0].met);
  EXPECT_DOUBLE_EQ((*pess)[0].value, 150.0);
  EXPECT_FALSE((*pess)[1].met);
  EXPECT_DOUBLE_EQ((*pess)[1].value, 900.0);
}

TEST(SloTest, EnergyBoundsPowerFromAboveAndTokensPerMegawattFromBelow) {
  auto kw = ParseSlo("kw_per_node<=10");
  ASSERT_TRUE(kw.ok()) << kw.status().message();
  EXPECT_EQ(kw->metric, "peak_kw_per_node");
  EXPECT_TRUE(kw->upper);
  auto bad = ParseSlo("joules_per_output_token>=1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("upper bound"), std::string::npos);
  bad = ParseSlo("output_tokens_per_s_per_mw<=1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("lower bound"), std::string::npos);
  std::vector<Slo> slos = {kw.value(), ParseSlo("output_tokens_per_s_per_mw>=50000").value()};
  nlohmann::json s = {{"peak_kw_per_node", 11.0}, {"output_tokens_per_s_per_mw", 60000.0}};
  auto checks = CheckSlos(slos, schema::FromJson(s, "s.json").value());
  ASSERT_TRUE(checks.ok()) << checks.status().message();
  EXPECT_FALSE((*checks)[0].met);
  EXPECT_TRUE((*checks)[1].met);
}

}  // namespace capplan::sim::sweep
