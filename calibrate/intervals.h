// Fitting the prediction bands (sim/prediction_intervals.h) to the public
// validation rows, and judging them leave-one-case-out.
//
// The classes' priors come from data the bands are not judged on: assumed,
// extrapolated and collective ops miss like a fitted kernel table misses
// the worst tenth of the records it was not fitted on (the median over the
// shipped profiles' fitted curves of their leave-one-out p90 relative
// error, read as a median absolute deviation); the host term misses like
// the step rows the engines' host costs are fitted to (their p90 absolute
// log error, read as an 80% half-width).
//
// Each group's base sigma_g, scale k_g and unmeasured-time sigma_x,g, and
// each regime's sigma_r, are fitted to the serving rows: for (k, sigma_x)
// on a grid, sigma_g^2 is the split-conformal 80% quantile of
// (z_i / 1.2816)^2 - (k u_i)^2 - (x_i sigma_x)^2 - (the row's regime terms),
// z_i = log(measured / predicted), and the pair giving the narrowest mean
// band is kept; so the x term takes what rows priced away from their
// release miss beyond rows measured at it, when the rows show it. A
// regime's sigma_r^2 is the same quantile, over the rows in it, of what
// they need beyond the rest (0 when the rest holds 80% of them already).
// Two rounds, regimes starting at 0. A group whose rows come from fewer
// than kBandMinCases cases takes the terms fitted on every serving row:
// its rows say too little about a case they did not see (e2el: three
// cases, one of them measured, one far off).
//
// A step row (one step, no queue) is judged by k_step u alone; k_step is
// the same quantile of (z_i / (1.2816 u_i)) over the step rows, the rows
// the host prior also reads.
#ifndef CAPPLAN_CALIBRATE_INTERVALS_H_
#define CAPPLAN_CALIBRATE_INTERVALS_H_

#include <map>
#include <string>
#include <vector>

#include "calibrate/public_validation.h"
#include "common/status.h"
#include "sim/prediction_intervals.h"

namespace capplan::calibrate {

// A validation row a band judges.
struct BandRow {
  std::string case_name, case_class, metric;
  sim::BandGroup group = sim::BandGroup::kThroughput;
  double log_ratio = 0;  // log(measured / predicted)
  sim::BandInputs inputs;
};

// The rows that ran, with a band group and band inputs (energy rows have no
// group).
std::vector<BandRow> BandRows(const PublicValidation& v);

// The case class whose rows the group and regime terms are fitted to, and
// the one whose rows set the host prior and k_step.
inline constexpr const char* kBandFitClass = "serving";
inline constexpr const char* kBandStepClass = "step";
// The fewest cases whose rows a group is fitted on alone.
inline constexpr int kBandMinCases = 4;

// The priors: `profile_prior` (the assumed / extrapolated / collective
// sigma, ProfilePrior) and the host sigma from the step rows of `rows`
// other than case `leave_out`'s.
struct BandPriorSource {
  double profile_prior = 0;
  std::string profile_method;
};
Result<BandPriorSource> ProfilePrior();
sim::BandModel BandPriors(const BandPriorSource& src, const std::vector<BandRow>& rows,
                          const std::string& leave_out = "");

// Fits the group and regime terms of `priors` to the kBandFitClass rows of
// `rows` other than case `leave_out`'s, and k_step to its kBandStepClass
// rows.
sim::BandModel FitBandModel(const std::vector<BandRow>& rows, const sim::BandModel& priors,
                            const std::string& leave_out = "");

// Whether a row's measurement lies in the band `m` gives its prediction,
// and that band's half-width in log space (a step row's by StepBandSigma).
double BandHalfWidth(const sim::BandModel& m, const BandRow& r);
bool Covered(const sim::BandModel& m, const BandRow& r);

// Coverage of one cell of the table.
struct CoverageCell {
  int rows = 0, covered = 0;
  std::vector<double> half_widths;  // log space, one per row
};
struct BandCoverage {
  // (class, group name or "all") -> cell; judged leave-one-case-out and, for
  // comparison, by the model fitted on every row.
  std::map<std::pair<std::string, std::string>, CoverageCell> loo, in_sample;
  // Leave-one-case-out, by the provenance class that priced most of the
  // row's time (and in-sample: the bands the shipped fit gives), and by
  // regime ("none" for rows in none).
  std::map<std::string, CoverageCell> by_provenance, by_provenance_in_sample, by_regime;
  int cases = 0;
};
BandCoverage LeaveOneCaseOutCoverage(const std::vector<BandRow>& rows,
                                     const BandPriorSource& src);
std::string FormatBandCoverage(const BandCoverage& c);

// `capplan validate --public`'s coverage table for `v` (empty when no row
// has a band).
Result<std::string> PublicValidationCoverage(const PublicValidation& v);

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_INTERVALS_H_
