// Prediction bands on simulated metrics, built from what priced the run.
//
// Every op a run priced falls in a provenance class (sim/op_provenance.h):
// measured at the deployment's engine release, cross-version, assumed from
// another kernel (or a default), extrapolated outside its records, a
// collective, or the host's per-step work. A run's op spread u combines the
// classes' busy-time shares s_c in quadrature:
//   u^2 = sum_c (s_c * sigma_c)^2
// where sigma_c is, for measured and cross-version ops, their own tables'
// held-out fit spread (plus the version drift, cross-version), and for the
// other classes a prior from validation/intervals.json. A metric's log-error
// spread adds its group's base term, a term for the time not priced by
// tables measured at the deployment's engine release (x = 1 - s_measured),
// and each regime the run is in:
//   sigma^2 = sigma_g^2 + (k_g * u)^2 + (x * sigma_x,g)^2
//             + sum_{regimes r} sigma_r^2
// (groups: throughput, ttft, tpot, e2el; regimes: kv_bound, preempting,
// prompt_heavy), and the band is p x exp(+-1.2816 sigma): a nominal 80%
// band. The x term is what lets a run priced at its own release get a
// narrower band than one priced cross-version or by assumed tables: the
// tables' own spreads barely differ, the serving rows' errors do. sigma_g,
// k_g, sigma_x,g and sigma_r are fitted to the public serving rows by
// `capplan validate --public --intervals-out` (calibrate/intervals.h), whose
// coverage table judges them leave-one-case-out. One step (no queue, no
// scheduler) has none of a run's terms: its band is k_step * u
// (StepBandSigma). A window short of steady state widens the band again
// (WidenForShortWindow).
#ifndef CAPPLAN_SIM_PREDICTION_INTERVALS_H_
#define CAPPLAN_SIM_PREDICTION_INTERVALS_H_

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "schema/run_summary.h"
#include "sim/cost_model.h"
#include "sim/op_provenance.h"

namespace capplan::sim {

enum class BandGroup { kThroughput = 0, kTtft, kTpot, kE2el };
constexpr int kNumBandGroups = 4;
inline constexpr std::array<const char*, kNumBandGroups> kBandGroupNames = {"throughput", "ttft",
                                                                            "tpot", "e2el"};

enum class Regime { kKvBound = 0, kPreempting, kPromptHeavy };
constexpr int kNumRegimes = 3;
inline constexpr std::array<const char*, kNumRegimes> kRegimeNames = {"kv_bound", "preempting",
                                                                      "prompt_heavy"};

// A run is prompt-heavy when it reads at least this many prompt tokens per
// output token: its time and TTFT are set by prefill, which the public
// serving rows predict worst.
inline constexpr double kPromptHeavyTokenRatio = 10.0;

// The band group of a metric by its summary key (every throughput, TTFT,
// TPOT, ITL and E2E statistic); none for the rest.
std::optional<BandGroup> BandGroupOf(std::string_view key);

// What a band is built from.
struct BandInputs {
  std::array<double, kNumOpProvenances> share{};   // of priced time; sums to 1
  std::array<double, kNumOpProvenances> spread{};  // mean sigma: measured, cross-version
  std::array<bool, kNumRegimes> regime{};
  double window_occupancy = 1;  // WidenForShortWindow's
};

struct BandModel {
  // sigma of the classes without spreads of their own (assumed,
  // extrapolated, collective, host); measured and cross-version read 0.
  std::array<double, kNumOpProvenances> prior{};
  struct Group {
    double scale = 1;       // k_g
    double sigma = 0;       // sigma_g
    double unmeasured = 0;  // sigma_x,g
    int rows = 0;           // the group's rows
    bool pooled = false;    // fitted on every group's rows (too few cases of its own)
  };
  std::array<Group, kNumBandGroups> groups{};
  struct Step {
    double scale = 1;  // k_step
    int rows = 0;
  } step;
  std::array<double, kNumRegimes> regime_sigma{};
  std::array<int, kNumRegimes> regime_rows{};
};

// The op spread u.
double OpSpread(const BandModel& m, const BandInputs& in);
// x: the share of priced time not measured at the deployment's release.
double UnmeasuredShare(const BandInputs& in);
// A metric's log-error spread sigma, and its band's half-width in log
// space (1.2816 sigma, widened for a short window).
double BandSigma(const BandModel& m, BandGroup g, const BandInputs& in);
double BandHalfWidth(const BandModel& m, BandGroup g, const BandInputs& in);
// One step's log-error spread, k_step * u.
double StepBandSigma(const BandModel& m, const BandInputs& in);

// A step's inputs (no regime: one step).
BandInputs BandInputsOfStep(const StepCost& c);
// A run's: its pools' provenance weighted by busy time; a regime when any
// pool is in it. Pools without provenance count as measured.
BandInputs BandInputsOf(const schema::RunSummary& s);
// Writes a pool's provenance_time_share and provenance_spread.
void SetProvenance(const StepCost& busy, schema::PoolSummary* p);

// validation/intervals.json, loaded once.
Result<const BandModel*> GetBandModel();
Result<BandModel> ParseBandModel(const std::string& text, const std::string& origin);

// A closed loop's measured window below this occupancy (mean requests in
// flight / concurrency, sim/steady_state.h) has not reached steady state.
// A window short by 2% moves throughput by less than 2% (its smaller
// batches step faster), so any two windows at or above it answer within
// the 2% a planner reads as one answer (tests/sim/steady_state_test.cc).
inline constexpr double kSteadyOccupancy = 0.98;

// The largest pool's cross_version_drift; 0 when no op was priced
// cross-version.
double CrossVersionDrift(const schema::RunSummary& summary);

// Sets the band (written as `<key>_lo` / `<key>_hi`) of every throughput,
// TTFT, TPOT, ITL and E2E metric the summary has, by the shipped model,
// then WidenForShortWindow.
Status AddPredictionIntervals(schema::RunSummary* summary);
void AddPredictionIntervals(const BandModel& m, schema::RunSummary* summary);

// Widens every interval by the summary's window occupancy when that is below
// kSteadyOccupancy: a window at occupancy o moves a metric by up to a factor
// 1/o from its steady value.
void WidenForShortWindow(schema::RunSummary* s);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_PREDICTION_INTERVALS_H_
