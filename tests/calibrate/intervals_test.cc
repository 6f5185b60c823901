// The band fit and its leave-one-case-out coverage (calibrate/intervals.h)
// on synthetic rows whose errors are known.
#include "calibrate/intervals.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/fit.h"
#include "hw/profile.h"

namespace capplan::calibrate {
namespace {

// Deterministic standard normals (Box-Muller on a 64-bit LCG), the same on
// every standard library.
class Normals {
 public:
  double Next() {
    const double u1 = Uniform(), u2 = Uniform();
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  }

 private:
  double Uniform() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return (static_cast<double>(state_ >> 11) + 0.5) / 9007199254740992.0;
  }
  uint64_t state_ = 42;
};

// `cases` serving cases of `rows` throughput rows each, every row priced by
// measured ops of spread 0.05; log errors ~ N(0, sigma) plus, for
// `kv_cases` of the cases (the first ones), a KV-bound regime adding
// N(0, kv_sigma).
std::vector<BandRow> Synthetic(int cases, int rows, double sigma, int kv_cases = 0,
                               double kv_sigma = 0) {
  Normals n;
  std::vector<BandRow> out;
  for (int c = 0; c < cases; ++c) {
    for (int r = 0; r < rows; ++r) {
      BandRow row;
      row.case_name = "c" + std::to_string(c);
      row.case_class = "serving";
      row.metric = "output_throughput";
      row.group = sim::BandGroup::kThroughput;
      row.inputs.share[static_cast<int>(sim::OpProvenance::kMeasured)] = 1;
      row.inputs.spread[static_cast<int>(sim::OpProvenance::kMeasured)] = 0.05;
      row.log_ratio = sigma * n.Next();
      if (c < kv_cases) {
        row.inputs.regime[static_cast<int>(sim::Regime::kKvBound)] = true;
        row.log_ratio += kv_sigma * n.Next();
      }
      out.push_back(row);
    }
  }
  return out;
}

double Covered(const CoverageCell& c) { return static_cast<double>(c.covered) / c.rows; }

TEST(BandCoverage, LeaveOneCaseOutCoverageIsNearNominal) {
  const std::vector<BandRow> rows = Synthetic(25, 8, 0.2);
  const BandCoverage c = LeaveOneCaseOutCoverage(rows, {0.4, "test prior"});
  EXPECT_EQ(c.cases, 25);
  const CoverageCell& all = c.loo.at({"serving", "all"});
  EXPECT_EQ(all.rows, 200);
  EXPECT_GE(Covered(all), 0.75);
  EXPECT_LE(Covered(all), 0.85);
  // The fitted band: about +-1.2816 x 0.2 in log space.
  const sim::BandModel m = FitBandModel(rows, BandPriors({0.4, ""}, rows));
  BandRow probe = rows[0];
  EXPECT_NEAR(BandHalfWidth(m, probe), 1.2816 * 0.2, 0.07);
  const std::string table = FormatBandCoverage(c);
  EXPECT_NE(table.find("serving   throughput"), std::string::npos) << table;
}

// Ten step rows of case "s" priced like the first row of `rows`, with
// log errors 0.01 .. 0.10.
void AddStepCase(std::vector<BandRow>* rows) {
  for (int i = 0; i < 10; ++i) {
    BandRow r = rows->front();
    r.case_name = "s";
    r.case_class = "step";
    r.log_ratio = 0.01 * (i + 1);
    rows->push_back(r);
  }
}

void ExpectSameFit(const sim::BandModel& a, const sim::BandModel& b) {
  for (int g = 0; g < sim::kNumBandGroups; ++g) {
    EXPECT_DOUBLE_EQ(a.groups[g].sigma, b.groups[g].sigma) << g;
    EXPECT_DOUBLE_EQ(a.groups[g].scale, b.groups[g].scale) << g;
    EXPECT_DOUBLE_EQ(a.groups[g].unmeasured, b.groups[g].unmeasured) << g;
    EXPECT_EQ(a.groups[g].rows, b.groups[g].rows) << g;
  }
  EXPECT_EQ(a.regime_sigma, b.regime_sigma);
  EXPECT_DOUBLE_EQ(a.step.scale, b.step.scale);
  EXPECT_EQ(a.prior, b.prior);
}

TEST(BandCoverage, LeftOutCaseDoesNotMoveItsOwnFit) {
  std::vector<BandRow> rows = Synthetic(10, 6, 0.2);
  AddStepCase(&rows);
  const sim::BandModel priors = BandPriors({0.4, ""}, rows);
  const sim::BandModel without = FitBandModel(rows, priors, "c3");
  // A wild case the fit leaves out changes nothing; fitted on, it widens.
  for (BandRow& r : rows) {
    if (r.case_name == "c3") r.log_ratio *= 20;
  }
  const sim::BandModel again = FitBandModel(rows, priors, "c3");
  const sim::BandModel with = FitBandModel(rows, priors);
  const int g = static_cast<int>(sim::BandGroup::kThroughput);
  ExpectSameFit(without, again);
  EXPECT_EQ(again.groups[g].rows, 54);
  EXPECT_GT(with.groups[g].sigma, without.groups[g].sigma);
  // Nor does a left-out step case: not its host prior, not k_step.
  const sim::BandModel no_step = FitBandModel(rows, BandPriors({0.4, ""}, rows, "s"), "s");
  for (BandRow& r : rows) {
    if (r.case_name == "s") r.log_ratio *= 20;
  }
  ExpectSameFit(no_step, FitBandModel(rows, BandPriors({0.4, ""}, rows, "s"), "s"));
  EXPECT_EQ(no_step.step.rows, 0);
  EXPECT_DOUBLE_EQ(no_step.step.scale, 1);
}

// Cases priced at their own release miss by 0.05, cases priced at another
// release (or by assumed tables) by 0.4: the fit puts the difference in the
// unmeasured term, and a measured row's band is the narrower by far.
TEST(BandCoverage, MeasuredRowsGetTheNarrowerBand) {
  std::vector<BandRow> rows = Synthetic(24, 6, 0.05);
  Normals n;
  const int measured = static_cast<int>(sim::OpProvenance::kMeasured);
  const int cross = static_cast<int>(sim::OpProvenance::kCrossVersion);
  const int assumed = static_cast<int>(sim::OpProvenance::kAssumed);
  for (BandRow& r : rows) {
    const int c = std::stoi(r.case_name.substr(1));
    if (c % 3 == 0) continue;  // a third of the cases stay measured
    const int to = c % 3 == 1 ? cross : assumed;
    r.inputs.share[measured] = r.inputs.spread[measured] = 0;
    r.inputs.share[to] = 1;
    r.inputs.spread[to] = to == cross ? 0.06 : 0;
    r.log_ratio = 0.4 * n.Next();
  }
  const sim::BandModel m = FitBandModel(rows, BandPriors({0.1, ""}, rows));
  const int g = static_cast<int>(sim::BandGroup::kThroughput);
  EXPECT_GT(m.groups[g].unmeasured, 0.3);
  EXPECT_LT(m.groups[g].sigma, 0.1);
  const double narrow = BandHalfWidth(m, rows[0]);         // c0: measured
  const double crossed = BandHalfWidth(m, rows[6]);        // c1: cross-version
  const double assumed_band = BandHalfWidth(m, rows[12]);  // c2: assumed
  EXPECT_LT(2 * narrow, crossed);
  EXPECT_LT(2 * narrow, assumed_band);
  // Held out, each kind of row is covered near nominal.
  const BandCoverage c = LeaveOneCaseOutCoverage(rows, {0.1, ""});
  for (const char* p : {"measured", "cross_version", "assumed"}) {
    const CoverageCell& cell = c.by_provenance.at(p);
    EXPECT_GE(Covered(cell), 0.7) << p;
    EXPECT_LE(Covered(cell), 0.95) << p;
  }
  EXPECT_LT(Quantile(c.by_provenance.at("measured").half_widths, 0.5),
            0.5 * Quantile(c.by_provenance.at("cross_version").half_widths, 0.5));
}

// A group whose rows come from fewer than kBandMinCases cases takes the
// terms fitted on every serving row.
TEST(BandCoverage, GroupOfFewCasesIsPooled) {
  std::vector<BandRow> rows = Synthetic(12, 6, 0.2);
  for (BandRow& r : rows) {
    if (r.case_name == "c0" || r.case_name == "c1") {
      r.group = sim::BandGroup::kE2el;
      r.metric = "mean_e2el_ms";
      r.log_ratio *= 0.1;
    }
  }
  const sim::BandModel m = FitBandModel(rows, BandPriors({0.4, ""}, rows));
  const sim::BandModel::Group& e2el = m.groups[static_cast<int>(sim::BandGroup::kE2el)];
  const sim::BandModel::Group& thr = m.groups[static_cast<int>(sim::BandGroup::kThroughput)];
  EXPECT_TRUE(e2el.pooled);
  EXPECT_FALSE(thr.pooled);
  EXPECT_EQ(e2el.rows, 12);
  EXPECT_EQ(thr.rows, 60);
  // Pooled over rows that miss by 0.2, the two cases' 0.02 does not narrow it.
  EXPECT_GT(e2el.sigma, 0.1);
  // A group with no rows at all takes the pooled terms too.
  const sim::BandModel::Group& ttft = m.groups[static_cast<int>(sim::BandGroup::kTtft)];
  EXPECT_TRUE(ttft.pooled);
  EXPECT_EQ(ttft.rows, 0);
  EXPECT_DOUBLE_EQ(ttft.sigma, e2el.sigma);
}

// One step is judged by k_step u: fitted to the step rows, none of a run's
// terms.
TEST(BandCoverage, StepRowsAreJudgedByTheirOpSpread) {
  std::vector<BandRow> rows = Synthetic(6, 4, 0.3);
  AddStepCase(&rows);
  const sim::BandModel m = FitBandModel(rows, BandPriors({0.4, ""}, rows));
  EXPECT_EQ(m.step.rows, 10);
  const BandRow& step = rows.back();
  const double u = sim::OpSpread(m, step.inputs);
  // The conformal 80% quantile of 10 rows: the 9th smallest, 0.09.
  EXPECT_NEAR(m.step.scale, 0.09 / (sim::kNormalZ80 * u), 1e-9);
  EXPECT_NEAR(BandHalfWidth(m, step), 0.09, 1e-9);
  EXPECT_LT(BandHalfWidth(m, step), 0.5 * BandHalfWidth(m, rows.front()));
}

TEST(BandCoverage, RegimeTermWidensOnlyItsRows) {
  const std::vector<BandRow> rows = Synthetic(20, 8, 0.1, 8, 0.4);
  const sim::BandModel m = FitBandModel(rows, BandPriors({0.4, ""}, rows));
  EXPECT_GT(m.regime_sigma[static_cast<int>(sim::Regime::kKvBound)], 0.2);
  EXPECT_EQ(m.regime_rows[static_cast<int>(sim::Regime::kKvBound)], 64);
  EXPECT_GT(BandHalfWidth(m, rows.front()), 2 * BandHalfWidth(m, rows.back()));
  const BandCoverage c = LeaveOneCaseOutCoverage(rows, {0.4, ""});
  EXPECT_GE(Covered(c.by_regime.at("kv_bound")), 0.7);
  EXPECT_GE(Covered(c.by_regime.at("none")), 0.7);
}

TEST(BandCoverage, StepRowsSetTheHostPrior) {
  std::vector<BandRow> rows = Synthetic(2, 4, 0.2);
  AddStepCase(&rows);  // p90 0.091
  const int host = static_cast<int>(sim::OpProvenance::kHost);
  EXPECT_NEAR(BandPriors({0.4, ""}, rows).prior[host], 0.091 / sim::kNormalZ80, 1e-9);
  // Without the step case the host takes the profiles' prior.
  EXPECT_DOUBLE_EQ(BandPriors({0.4, ""}, rows, "s").prior[host], 0.4);
}

// The profile prior is a median over fitted curves; an assumed table holds
// its source's curves and must not be counted again.
TEST(BandPriorSource, CountsEachFittedCurveOnceNotItsAssumedCopies) {
  size_t own = 0, assumed = 0;
  for (const std::string& name : hw::ShippedProfileNames()) {
    auto p = hw::LoadHardwareProfile(name);
    ASSERT_TRUE(p.ok()) << p.status().message();
    std::vector<const hw::OpEfficiency*> effs;
    for (const auto& [cls, eff] : p->efficiency) effs.push_back(&eff);
    for (const auto& [kname, k] : p->kernels) {
      if (!k.assumed()) effs.push_back(&k.efficiency);
    }
    for (const hw::OpEfficiency* e : effs) {
      for (const hw::EfficiencyCurve* c : {&e->compute, &e->memory}) {
        if (c->fit_points > 0 && c->loo_p90_rel_err >= 0) ++own;
      }
    }
    for (const auto& [kname, k] : p->kernels) {
      if (!k.assumed()) continue;
      for (const hw::EfficiencyCurve* c : {&k.efficiency.compute, &k.efficiency.memory}) {
        if (c->fit_points > 0 && c->loo_p90_rel_err >= 0) ++assumed;
      }
    }
  }
  ASSERT_GT(assumed, 0u);  // the shipped profiles do hold assumed tables
  auto src = ProfilePrior();
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_NE(src->profile_method.find(" " + std::to_string(own) + " fitted curves"),
            std::string::npos)
      << src->profile_method << " (own " << own << ", assumed " << assumed << ")";
}

}  // namespace
}  // namespace capplan::calibrate
