#include "sim/prediction_intervals.h"

#include <algorithm>
#include <cmath>

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "common/json_util.h"

namespace capplan::sim {

namespace {

constexpr const char* kFormat = "capplan.prediction_intervals.v3";

int Index(OpProvenance p) { return static_cast<int>(p); }

bool EndsWith(std::string_view s, std::string_view end) {
  return s.size() >= end.size() && s.substr(s.size() - end.size()) == end;
}

// e^x from IEEE basic operations only (+, -, *, / and exact scaling), so
// that every build prints the same interval ends: std::exp may differ in
// its last bit between math libraries (glibc for the command line, musl in
// the what-if page's WebAssembly module). Cody-Waite reduction by ln 2,
// then a Taylor series on |r| <= ln2/2 (truncation below 4e-18). The
// split of ln 2 and 1/ln 2 are fdlibm's (ln2HI[0], ln2LO[0], invln2 in
// e_exp.c, Sun Microsystems 1993, as in glibc and musl).
double PortableExp(double x) {
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // trailing bits zero: k * hi is exact
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kInvLn2 = 1.44269504088896338700e+00;
  const double k = std::nearbyint(x * kInvLn2);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  double term = 1, sum = 1;
  for (int i = 1; i <= 17; ++i) {
    term = term * r / i;
    sum += term;
  }
  return std::ldexp(sum, static_cast<int>(k));
}

// The classes whose sigma is a prior of the file's, not their own tables'.
constexpr OpProvenance kPriorClasses[] = {OpProvenance::kAssumed, OpProvenance::kExtrapolated,
                                          OpProvenance::kCollective, OpProvenance::kHost};

Status ParsePriors(JsonObject& root, BandModel* m) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject priors, root.Child("priors", true));
  for (OpProvenance p : kPriorClasses) {
    const char* name = kOpProvenanceNames[Index(p)];
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, priors.Child(name, true));
    double& sigma = m->prior[Index(p)];
    CAPPLAN_RETURN_IF_ERROR(o.Get("sigma", &sigma, true));
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange("sigma", sigma, 0, 5));
    o.Touch("method");
    CAPPLAN_RETURN_IF_ERROR(o.Finish());
  }
  return priors.Finish();
}

Status ParseGroups(JsonObject& root, BandModel* m) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject groups, root.Child("groups", true));
  for (int g = 0; g < kNumBandGroups; ++g) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, groups.Child(kBandGroupNames[g], true));
    BandModel::Group& x = m->groups[g];
    CAPPLAN_RETURN_IF_ERROR(o.Get("sigma", &x.sigma, true));
    CAPPLAN_RETURN_IF_ERROR(o.Get("scale", &x.scale, true));
    CAPPLAN_RETURN_IF_ERROR(o.Get("unmeasured", &x.unmeasured, true));
    CAPPLAN_RETURN_IF_ERROR(o.Get("rows", &x.rows, true));
    CAPPLAN_RETURN_IF_ERROR(o.Get("pooled", &x.pooled, true));
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange("sigma", x.sigma, 0, 5));
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange("scale", x.scale, 0, 10));
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange("unmeasured", x.unmeasured, 0, 5));
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange("rows", x.rows, 0, 1e6));
    CAPPLAN_RETURN_IF_ERROR(o.Finish());
  }
  return groups.Finish();
}

Status ParseRegimes(JsonObject& root, BandModel* m) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject regimes, root.Child("regimes", true));
  for (int r = 0; r < kNumRegimes; ++r) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, regimes.Child(kRegimeNames[r], true));
    CAPPLAN_RETURN_IF_ERROR(o.Get("sigma", &m->regime_sigma[r], true));
    CAPPLAN_RETURN_IF_ERROR(o.Get("rows", &m->regime_rows[r], true));
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange("sigma", m->regime_sigma[r], 0, 5));
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange("rows", m->regime_rows[r], 0, 1e6));
    o.Touch("method");
    CAPPLAN_RETURN_IF_ERROR(o.Finish());
  }
  return regimes.Finish();
}

Status ParseStep(JsonObject& root, BandModel* m) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, root.Child("step", true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("scale", &m->step.scale, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("rows", &m->step.rows, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("scale", m->step.scale, 0, 10));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("rows", m->step.rows, 0, 1e6));
  o.Touch("method");
  return o.Finish();
}

}  // namespace

std::optional<BandGroup> BandGroupOf(std::string_view key) {
  if (key.find("_throughput") != std::string_view::npos) return BandGroup::kThroughput;
  if (!EndsWith(key, "_ms")) return std::nullopt;
  if (EndsWith(key, "_ttft_ms")) return BandGroup::kTtft;
  if (EndsWith(key, "_tpot_ms") || EndsWith(key, "_itl_ms") || key == "decode_step_ms") {
    return BandGroup::kTpot;
  }
  if (EndsWith(key, "_e2el_ms")) return BandGroup::kE2el;
  return std::nullopt;
}

double OpSpread(const BandModel& m, const BandInputs& in) {
  double u2 = 0;
  for (int c = 0; c < kNumOpProvenances; ++c) {
    const double sigma = in.spread[c] > 0 ? in.spread[c] : m.prior[c];
    u2 += (in.share[c] * sigma) * (in.share[c] * sigma);
  }
  return std::sqrt(u2);
}

double UnmeasuredShare(const BandInputs& in) {
  return std::clamp(1 - in.share[Index(OpProvenance::kMeasured)], 0.0, 1.0);
}

double BandSigma(const BandModel& m, BandGroup g, const BandInputs& in) {
  const BandModel::Group& x = m.groups[static_cast<int>(g)];
  const double u = x.scale * OpSpread(m, in);
  const double v = UnmeasuredShare(in) * x.unmeasured;
  double s2 = x.sigma * x.sigma + u * u + v * v;
  for (int r = 0; r < kNumRegimes; ++r) {
    if (in.regime[r]) s2 += m.regime_sigma[r] * m.regime_sigma[r];
  }
  return std::sqrt(s2);
}

double BandHalfWidth(const BandModel& m, BandGroup g, const BandInputs& in) {
  const double o = in.window_occupancy < kSteadyOccupancy ? std::max(in.window_occupancy, 1e-3)
                                                          : 1.0;
  return kNormalZ80 * BandSigma(m, g, in) - std::log(o);
}

double StepBandSigma(const BandModel& m, const BandInputs& in) {
  return m.step.scale * OpSpread(m, in);
}

BandInputs BandInputsOfStep(const StepCost& c) {
  BandInputs in;
  double total = 0;
  for (double t : c.provenance_seconds) total += t;
  if (!(total > 0)) {
    in.share[Index(OpProvenance::kMeasured)] = 1;
    return in;
  }
  for (int i = 0; i < kNumOpProvenances; ++i) {
    in.share[i] = c.provenance_seconds[i] / total;
    if (c.provenance_seconds[i] > 0) in.spread[i] = c.spread_seconds[i] / c.provenance_seconds[i];
  }
  return in;
}

void SetProvenance(const StepCost& busy, schema::PoolSummary* p) {
  const BandInputs in = BandInputsOfStep(busy);
  auto& share = p->provenance_time_share.emplace();
  auto& spread = p->provenance_spread.emplace();
  for (int i = 0; i < kNumOpProvenances; ++i) {
    share[kOpProvenanceNames[i]] = in.share[i];
    if (in.spread[i] > 0) spread[kOpProvenanceNames[i]] = in.spread[i];
  }
}

BandInputs BandInputsOf(const schema::RunSummary& s) {
  BandInputs in;
  std::array<double, kNumOpProvenances> spread_time{};
  double weight_sum = 0;
  for (const schema::PoolSummary& p : s.pools) {
    const double w = p.busy_s.value_or(0) > 0 ? *p.busy_s : 1.0;
    weight_sum += w;
    if (!p.provenance_time_share) {
      in.share[Index(OpProvenance::kMeasured)] += w;
    } else {
      for (int i = 0; i < kNumOpProvenances; ++i) {
        const auto& share = *p.provenance_time_share;
        const auto it = share.find(kOpProvenanceNames[i]);
        const double t = it == share.end() ? 0.0 : w * it->second;
        in.share[i] += t;
        if (!p.provenance_spread) continue;
        const auto sp = p.provenance_spread->find(kOpProvenanceNames[i]);
        if (sp != p.provenance_spread->end()) spread_time[i] += t * sp->second;
      }
    }
    if (p.kv_bound.value_or(false)) in.regime[static_cast<int>(Regime::kKvBound)] = true;
    if (p.retractions.value_or(0) > 0) in.regime[static_cast<int>(Regime::kPreempting)] = true;
  }
  for (int i = 0; i < kNumOpProvenances; ++i) {
    if (in.share[i] > 0) in.spread[i] = spread_time[i] / in.share[i];
    if (weight_sum > 0) in.share[i] /= weight_sum;
  }
  if (weight_sum == 0) in.share[Index(OpProvenance::kMeasured)] = 1;
  in.window_occupancy = s.window_occupancy.value_or(1);
  if (s.input_throughput && s.output_throughput && *s.output_throughput > 0 &&
      *s.input_throughput >= kPromptHeavyTokenRatio * *s.output_throughput) {
    in.regime[static_cast<int>(Regime::kPromptHeavy)] = true;
  }
  return in;
}

Result<BandModel> ParseBandModel(const std::string& text, const std::string& origin) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(text, origin));
  JsonObject root(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(root.CheckFormat(kFormat));
  root.Touch("method");
  root.Touch("generated_by");
  double coverage = 0;
  CAPPLAN_RETURN_IF_ERROR(root.Get("coverage", &coverage, true));
  CAPPLAN_RETURN_IF_ERROR(root.CheckRange("coverage", coverage, 0.8, 0.8));
  BandModel m;
  CAPPLAN_RETURN_IF_ERROR(ParsePriors(root, &m));
  CAPPLAN_RETURN_IF_ERROR(ParseGroups(root, &m));
  CAPPLAN_RETURN_IF_ERROR(ParseRegimes(root, &m));
  CAPPLAN_RETURN_IF_ERROR(ParseStep(root, &m));
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  return m;
}

Result<const BandModel*> GetBandModel() {
  static const Result<BandModel> kModel = []() -> Result<BandModel> {
    const std::string path = DataPath("validation/intervals.json");
    CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    return ParseBandModel(text, path);
  }();
  if (!kModel.ok()) return kModel.status();
  return &kModel.value();
}

double CrossVersionDrift(const schema::RunSummary& summary) {
  double d = 0;
  for (const schema::PoolSummary& p : summary.pools) {
    d = std::max(d, p.cross_version_drift.value_or(0));
  }
  return d;
}

void AddPredictionIntervals(const BandModel& m, schema::RunSummary* summary) {
  const BandInputs in = BandInputsOf(*summary);
  std::array<double, kNumBandGroups> half{};
  for (int g = 0; g < kNumBandGroups; ++g) {
    half[g] = kNormalZ80 * BandSigma(m, static_cast<BandGroup>(g), in);
  }
  for (const std::string& key : schema::MetricKeys()) {
    const std::optional<BandGroup> g = BandGroupOf(key);
    if (!g) continue;
    const std::optional<double> x = schema::Metric(*summary, key);
    if (!x) continue;
    const double h = half[static_cast<int>(*g)];
    summary->intervals[key] = {*x * PortableExp(-h), *x * PortableExp(h)};
  }
  WidenForShortWindow(summary);
}

Status AddPredictionIntervals(schema::RunSummary* summary) {
  CAPPLAN_ASSIGN_OR_RETURN(const BandModel* m, GetBandModel());
  AddPredictionIntervals(*m, summary);
  return Status::Ok();
}

void WidenForShortWindow(schema::RunSummary* s) {
  if (!s->window_occupancy || *s->window_occupancy >= kSteadyOccupancy) return;
  const double o = std::max(*s->window_occupancy, 1e-3);
  for (auto& [key, iv] : s->intervals) {
    iv.lo *= o;
    iv.hi /= o;
  }
}

}  // namespace capplan::sim
