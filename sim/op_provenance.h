// What priced each second of a step, for the prediction bands
// (sim/prediction_intervals.h): every op falls in one provenance class, and
// ops whose table has held-out fit errors carry their own log-error spread.
#ifndef CAPPLAN_SIM_OP_PROVENANCE_H_
#define CAPPLAN_SIM_OP_PROVENANCE_H_

#include <array>
#include <cmath>

#include "hw/profile.h"

namespace capplan::sim {

enum class OpProvenance {
  kMeasured = 0,  // a curve fitted to records at the deployment's engine release, in range
  kCrossVersion,  // a kernel table measured at another engine or release, in range
  kAssumed,       // a table assumed from another kernel, a default or an unfitted anchor
  kExtrapolated,  // a shape outside the binding curve's fitted or anchored range
  kCollective,    // a collective, priced by the profile's collective model
  kHost,          // launches and the engine's per-step host costs
};
constexpr int kNumOpProvenances = 6;
inline constexpr std::array<const char*, kNumOpProvenances> kOpProvenanceNames = {
    "measured", "cross_version", "assumed", "extrapolated", "collective", "host"};

// Standard-normal quantiles the spreads are stated at: the median absolute
// deviation is 0.6745 sigma, and a central 80% band is +-1.2816 sigma.
inline constexpr double kNormalMedianAbs = 0.6744897501960817;
inline constexpr double kNormalZ80 = 1.2815515655446004;

// The log-error spread of a fitted curve at a shape it was not fitted on:
// its leave-one-out median relative error read as a normal's median absolute
// deviation. -1 when the curve has no held-out error (not fitted).
inline double CurveSpread(const hw::EfficiencyCurve& c) {
  if (c.fit_points <= 0 || c.loo_median_rel_err < 0) return -1;
  return std::log1p(c.loo_median_rel_err) / kNormalMedianAbs;
}

// A version drift d read as the half-width of an 80% band: the spread a
// table measured at another release adds.
inline double DriftSpread(double drift) { return std::log1p(drift) / kNormalZ80; }

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_OP_PROVENANCE_H_
