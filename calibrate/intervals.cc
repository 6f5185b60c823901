// The prediction bands' fit (calibrate/intervals.h) and PredictionIntervalsJson
// (public_validation.h): validation/intervals.json.
#include "calibrate/intervals.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "calibrate/fit.h"
#include "hw/profile.h"

namespace capplan::calibrate {

namespace {

using sim::BandGroup;
using sim::BandModel;
using sim::kNumBandGroups;
using sim::kNumRegimes;
using sim::OpProvenance;

constexpr double kCoverage = 0.8;
// The scales k_g tried: below 1 a run's op spread reaches its metrics
// damped (errors of many ops partly cancel), above 1 amplified (queueing).
constexpr double kScales[] = {0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0};
// The sigma_x tried: 0 (the rows show no gap between measured and
// unmeasured time) up to a factor e^3.8 either side at x = 1.
constexpr double kUnmeasuredSigmas[] = {0,   0.1, 0.2,  0.3, 0.4, 0.5, 0.6,
                                        0.8, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0};

// The split-conformal 80% quantile: the ceil((n + 1) 0.8)-th smallest, so a
// new row exchangeable with these lands below it with probability >= 80%.
double ConformalQuantile(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const size_t k = static_cast<size_t>(std::ceil((n + 1) * kCoverage));
  return v[std::min(n, std::max<size_t>(k, 1)) - 1];
}

// (z / 1.2816)^2: the variance a row's band needs to hold it.
double Needed(const BandRow& r) {
  const double s = r.log_ratio / sim::kNormalZ80;
  return s * s;
}

double RegimeVariance(const BandModel& m, const BandRow& r, int skip = -1) {
  double v = 0;
  for (int k = 0; k < kNumRegimes; ++k) {
    if (k != skip && r.inputs.regime[k]) v += m.regime_sigma[k] * m.regime_sigma[k];
  }
  return v;
}

// The variance a group's terms other than sigma_g give a row.
double OtherVariance(const BandModel& m, double k, double sigma_x, const BandRow& r) {
  const double u = k * sim::OpSpread(m, r.inputs);
  const double v = sim::UnmeasuredShare(r.inputs) * sigma_x;
  return u * u + v * v + RegimeVariance(m, r);
}

// A group's terms fitted to `rows` with the regimes as they stand.
BandModel::Group FitGroup(const std::vector<const BandRow*>& rows, const BandModel& m) {
  BandModel::Group best;
  double best_width = INFINITY;
  for (double k : kScales) {
    for (double sigma_x : kUnmeasuredSigmas) {
      std::vector<double> need, other;
      for (const BandRow* r : rows) {
        other.push_back(OtherVariance(m, k, sigma_x, *r));
        need.push_back(Needed(*r) - other.back());
      }
      const double s2 = std::max(0.0, ConformalQuantile(need));
      double width = 0;
      for (double o : other) width += std::sqrt(s2 + o);
      if (width < best_width) {
        best_width = width;
        best = {k, std::sqrt(s2), sigma_x, static_cast<int>(rows.size()), false};
      }
    }
  }
  return best;
}

int CaseCount(const std::vector<const BandRow*>& rows) {
  std::set<std::string> cases;
  for (const BandRow* r : rows) cases.insert(r->case_name);
  return static_cast<int>(cases.size());
}

void FitRegime(const std::vector<const BandRow*>& rows, int k, BandModel* m) {
  std::vector<double> need;
  for (const BandRow* r : rows) {
    if (!r->inputs.regime[k]) continue;
    const double rest = sim::BandSigma(*m, r->group, r->inputs);
    need.push_back(Needed(*r) - (rest * rest - m->regime_sigma[k] * m->regime_sigma[k]));
  }
  m->regime_rows[k] = static_cast<int>(need.size());
  m->regime_sigma[k] = need.empty() ? 0.0 : std::sqrt(std::max(0.0, ConformalQuantile(need)));
}

}  // namespace

std::vector<BandRow> BandRows(const PublicValidation& v) {
  std::vector<BandRow> out;
  for (const PublicValidationRow& r : v.rows) {
    if (!r.skipped.empty() || !r.band || !(r.predicted > 0) || !(r.measured > 0)) continue;
    const std::optional<BandGroup> g = sim::BandGroupOf(r.metric);
    if (!g) continue;
    out.push_back({r.case_name, r.case_class, r.metric, *g, std::log(r.measured / r.predicted),
                   *r.band});
  }
  return out;
}

Result<BandPriorSource> ProfilePrior() {
  std::vector<double> p90;
  for (const std::string& name : hw::ShippedProfileNames()) {
    CAPPLAN_ASSIGN_OR_RETURN(hw::HardwareProfile p, hw::LoadHardwareProfile(name));
    std::vector<const hw::OpEfficiency*> effs;
    for (const auto& [cls, eff] : p.efficiency) effs.push_back(&eff);
    // An assumed table carries its source's curves: counting it again
    // would weigh that source twice.
    for (const auto& [kname, k] : p.kernels) {
      if (!k.assumed()) effs.push_back(&k.efficiency);
    }
    for (const hw::OpEfficiency* e : effs) {
      for (const hw::EfficiencyCurve* c : {&e->compute, &e->memory}) {
        if (c->fit_points > 0 && c->loo_p90_rel_err >= 0) p90.push_back(c->loo_p90_rel_err);
      }
    }
  }
  BandPriorSource s;
  if (p90.empty()) return s;
  const double med = Quantile(p90, 0.5);
  s.profile_prior = std::log1p(med) / sim::kNormalMedianAbs;
  s.profile_method = "log(1 + " + std::to_string(med) +
                     ") / 0.6745: the median over the shipped profiles' " +
                     std::to_string(p90.size()) +
                     " fitted curves of their leave-one-out p90 relative time error, read as a "
                     "median absolute deviation";
  return s;
}

BandModel BandPriors(const BandPriorSource& src, const std::vector<BandRow>& rows,
                     const std::string& leave_out) {
  BandModel m;
  for (OpProvenance p :
       {OpProvenance::kAssumed, OpProvenance::kExtrapolated, OpProvenance::kCollective}) {
    m.prior[static_cast<int>(p)] = src.profile_prior;
  }
  std::vector<double> step;
  for (const BandRow& r : rows) {
    if (r.case_class == kBandStepClass && r.case_name != leave_out) {
      step.push_back(std::fabs(r.log_ratio));
    }
  }
  m.prior[static_cast<int>(OpProvenance::kHost)] =
      step.empty() ? src.profile_prior : Quantile(step, 0.9) / sim::kNormalZ80;
  return m;
}

BandModel FitBandModel(const std::vector<BandRow>& rows, const BandModel& priors,
                       const std::string& leave_out) {
  BandModel m = priors;
  m.regime_sigma = {};
  std::vector<const BandRow*> fit;
  std::vector<double> step;
  for (const BandRow& r : rows) {
    if (r.case_name == leave_out) continue;
    if (r.case_class == kBandFitClass) fit.push_back(&r);
    const double u = sim::OpSpread(m, r.inputs);
    if (r.case_class == kBandStepClass && u > 0) {
      step.push_back(std::fabs(r.log_ratio) / (sim::kNormalZ80 * u));
    }
  }
  m.step = {step.empty() ? 1.0 : ConformalQuantile(step), static_cast<int>(step.size())};
  if (fit.empty()) return m;
  for (int round = 0; round < 2; ++round) {
    const BandModel::Group pooled = FitGroup(fit, m);
    for (int g = 0; g < kNumBandGroups; ++g) {
      std::vector<const BandRow*> in;
      for (const BandRow* r : fit) {
        if (static_cast<int>(r->group) == g) in.push_back(r);
      }
      if (CaseCount(in) < kBandMinCases) {
        m.groups[g] = pooled;
        m.groups[g].rows = static_cast<int>(in.size());
        m.groups[g].pooled = true;
      } else {
        m.groups[g] = FitGroup(in, m);
      }
    }
    for (int k = 0; k < kNumRegimes; ++k) FitRegime(fit, k, &m);
  }
  return m;
}

double BandHalfWidth(const BandModel& m, const BandRow& r) {
  if (r.case_class == kBandStepClass) return sim::kNormalZ80 * sim::StepBandSigma(m, r.inputs);
  return sim::BandHalfWidth(m, r.group, r.inputs);
}

bool Covered(const BandModel& m, const BandRow& r) {
  return std::fabs(r.log_ratio) <= BandHalfWidth(m, r);
}

Result<nlohmann::json> PredictionIntervalsJson(const PublicValidation& v) {
  const std::vector<BandRow> rows = BandRows(v);
  CAPPLAN_ASSIGN_OR_RETURN(BandPriorSource src, ProfilePrior());
  const BandModel m = FitBandModel(rows, BandPriors(src, rows));
  nlohmann::json out;
  out["format"] = "capplan.prediction_intervals.v3";
  out["coverage"] = kCoverage;
  out["generated_by"] = "capplan validate --public --intervals-out validation/intervals.json";
  out["method"] =
      "a metric p gets [p exp(-1.2816 s), p exp(1.2816 s)], s^2 = sigma_g^2 + (scale_g u)^2 + "
      "(x unmeasured_g)^2 + sum of the run's regimes' sigma^2, u^2 = sum over provenance classes "
      "of (time share x sigma)^2, x = the time share not measured at the deployment's engine "
      "release (sim/prediction_intervals.h); groups and regimes fitted to the serving rows, a "
      "group with rows from fewer than " +
      std::to_string(kBandMinCases) +
      " cases pooled over them all (calibrate/intervals.h), judged leave-one-case-out by "
      "validate --public; one step's s = step.scale x u";
  nlohmann::json priors = nlohmann::json::object();
  for (OpProvenance p : {OpProvenance::kAssumed, OpProvenance::kExtrapolated,
                         OpProvenance::kCollective, OpProvenance::kHost}) {
    const int i = static_cast<int>(p);
    priors[sim::kOpProvenanceNames[i]] = {
        {"sigma", m.prior[i]},
        {"method", p == OpProvenance::kHost
                       ? std::string("the p90 |log(measured / predicted)| of the step rows (the "
                                     "engines' host costs are fitted to them) / 1.2816")
                       : src.profile_method}};
  }
  out["priors"] = priors;
  nlohmann::json groups = nlohmann::json::object();
  for (int g = 0; g < kNumBandGroups; ++g) {
    groups[sim::kBandGroupNames[g]] = {{"sigma", m.groups[g].sigma},
                                       {"scale", m.groups[g].scale},
                                       {"unmeasured", m.groups[g].unmeasured},
                                       {"rows", m.groups[g].rows},
                                       {"pooled", m.groups[g].pooled}};
  }
  out["groups"] = groups;
  nlohmann::json regimes = nlohmann::json::object();
  for (int k = 0; k < kNumRegimes; ++k) {
    regimes[sim::kRegimeNames[k]] = {{"sigma", m.regime_sigma[k]},
                                     {"rows", m.regime_rows[k]},
                                     {"method", "fitted to the serving rows in the regime"}};
  }
  out["regimes"] = regimes;
  out["step"] = {{"scale", m.step.scale},
                 {"rows", m.step.rows},
                 {"method",
                  "the split-conformal 80% quantile over the step rows of |log(measured / "
                  "predicted)| / (1.2816 u)"}};
  return out;
}

}  // namespace capplan::calibrate
