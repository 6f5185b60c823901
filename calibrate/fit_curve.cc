// Fitting one efficiency table: the two-term curve through its points
// (log-space least squares, fit.h), leave-one-out and leave-one-source-out
// errors, and the quantiles the report gives.
#include "calibrate/fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <set>

namespace capplan::calibrate {

namespace {

// A curve's linear form t = A*u + B*v (see fit.h): u, v per point.
struct Lin {
  double u, v, t;
};

double SumSqLog(const std::vector<Lin>& rows, double a, double b) {
  double s = 0;
  for (const Lin& r : rows) {
    const double p = a * r.u + b * r.v;
    if (p <= 0) return 1e300;
    const double d = std::log(p / r.t);
    s += d * d;
  }
  return s;
}

// Relative least squares, then Gauss-Newton in log space; B >= 0 (a negative
// half-saturation point has no meaning), A > 0. `fix_ratio` >= 0 holds
// B = fix_ratio * A (one free parameter) when the points cannot separate them.
bool SolveLinear(const std::vector<Lin>& rows, double fix_ratio, double* a, double* b) {
  const int n = static_cast<int>(rows.size());
  if (n == 0) return false;
  if (fix_ratio >= 0) {
    // t = A * (u + ratio * v): relative LS has a closed form.
    double num = 0, den = 0;
    for (const Lin& r : rows) {
      const double w = (r.u + fix_ratio * r.v) / r.t;
      num += w;
      den += w * w;
    }
    if (den <= 0) return false;
    *a = num / den;
    *b = fix_ratio * *a;
    return *a > 0;
  }
  Eigen::MatrixXd m(n, 2);
  Eigen::VectorXd rhs = Eigen::VectorXd::Ones(n);
  for (int i = 0; i < n; ++i) {
    m(i, 0) = rows[i].u / rows[i].t;
    m(i, 1) = rows[i].v / rows[i].t;
  }
  Eigen::Vector2d s = m.colPivHouseholderQr().solve(rhs);
  double A = s(0), B = s(1);
  if (!(B >= 0) || !(A > 0)) {
    // Clamp to the boundary and refit the free parameter.
    if (!(B >= 0)) {
      B = 0;
      double num = 0, den = 0;
      for (int i = 0; i < n; ++i) num += m(i, 0), den += m(i, 0) * m(i, 0);
      A = den > 0 ? num / den : 0;
    }
    if (!(A > 0)) return false;
  }
  // Gauss-Newton on sum (log(A u + B v) - log t)^2 with step halving.
  double cost = SumSqLog(rows, A, B);
  for (int iter = 0; iter < 30; ++iter) {
    Eigen::MatrixXd j(n, 2);
    Eigen::VectorXd r(n);
    for (int i = 0; i < n; ++i) {
      const double p = A * rows[i].u + B * rows[i].v;
      j(i, 0) = rows[i].u / p;
      j(i, 1) = rows[i].v / p;
      r(i) = std::log(p / rows[i].t);
    }
    Eigen::Vector2d d = (j.transpose() * j).ldlt().solve(-j.transpose() * r);
    if (!d.allFinite()) break;
    double step = 1;
    bool improved = false;
    for (int h = 0; h < 20; ++h, step *= 0.5) {
      const double na = A + step * d(0), nb = std::max(0.0, B + step * d(1));
      if (na <= 0) continue;
      const double c = SumSqLog(rows, na, nb);
      if (c < cost) {
        improved = cost - c > 1e-15 * (1 + cost);
        A = na, B = nb, cost = c;
        break;
      }
    }
    if (!improved) break;
  }
  *a = A;
  *b = B;
  return true;
}

// Fits one curve on its points. `memory`: x is bytes, u = bytes/hbm, v = 1/hbm;
// compute: u = flops/rate, v = flops/(rate*x).
CurveFit FitCurve(const std::vector<const FitPoint*>& pts, bool memory, double hbm,
                  const hw::EfficiencyCurve& base) {
  CurveFit f;
  f.points = static_cast<int>(pts.size());
  if (pts.empty()) {
    f.note = "no records bound by this term; kept from the base profile";
    return f;
  }
  std::vector<Lin> rows;
  std::set<double> xs;
  f.lo = 1e300, f.hi = 0;
  for (const FitPoint* p : pts) {
    const double x = memory ? p->bytes : p->x;
    const double ceil = p->hbm > 0 ? p->hbm : hbm;
    xs.insert(x);
    f.lo = std::min(f.lo, x);
    f.hi = std::max(f.hi, x);
    if (memory) {
      rows.push_back({p->bytes / ceil, 1.0 / ceil, p->t_s});
    } else {
      rows.push_back({p->flops / p->rate, p->flops / (p->rate * x), p->t_s});
    }
  }
  double a = 0, b = 0;
  // Shapes within a factor 1.5 of each other cannot separate the saturated
  // rate from the half-saturation point: the second parameter would fit
  // measurement noise.
  const bool one_shape = xs.size() < 2 || f.hi < 1.5 * f.lo;
  if (!SolveLinear(rows, one_shape ? base.half : -1.0, &a, &b)) {
    f.note = "least squares found no positive solution; kept from the base profile";
    return f;
  }
  if (one_shape) {
    f.note = "shapes within 1.5x of each other: half-saturation held at the base profile's";
  }
  f.fitted = true;
  f.max = 1.0 / a;
  f.half = b / a;
  if (f.max > 1.0) {
    // More than the ceiling: the ceiling (measured copy / datasheet rate) is
    // too low for this kernel; a profile cannot say eff > 1.
    f.note += std::string(f.note.empty() ? "" : "; ") + "fitted max " + std::to_string(f.max) +
              " > 1 clamped to 1 (ceiling below what the kernel reached)";
    f.max = 1.0;
  }
  return f;
}

hw::EfficiencyCurve AsCurve(const CurveFit& f, const hw::EfficiencyCurve& base) {
  if (!f.fitted) return base;
  hw::EfficiencyCurve c = base;
  c.max = f.max;
  c.half = f.half;
  return c;
}

double TermSeconds(const FitPoint& p, const hw::EfficiencyCurve& c, bool memory, double hbm) {
  if (p.hbm > 0) hbm = p.hbm;
  if (memory) return p.bytes > 0 ? p.bytes / (hbm * c.At(p.bytes)) : 0;
  return p.flops > 0 ? p.flops / (p.rate * c.At(p.x)) : 0;
}

// Fit without LOO; returns the fitted curves (base where not fitted).
ClassFit FitOnce(const std::string& key, const std::vector<FitPoint>& points,
                 const hw::OpEfficiency& base, double hbm) {
  ClassFit cf;
  cf.key = key;
  cf.points = points;
  hw::EfficiencyCurve comp = base.compute, mem = base.memory;
  std::vector<int> bound(points.size(), -1);  // 1 memory, 0 compute
  for (int iter = 0; iter < 20; ++iter) {
    bool changed = false;
    std::vector<const FitPoint*> cp, mp;
    for (size_t i = 0; i < points.size(); ++i) {
      const int m =
          TermSeconds(points[i], mem, true, hbm) >= TermSeconds(points[i], comp, false, hbm) ? 1
                                                                                             : 0;
      changed |= m != bound[i];
      bound[i] = m;
      (m ? mp : cp).push_back(&points[i]);
    }
    if (!changed) break;
    cf.compute = FitCurve(cp, false, hbm, base.compute);
    cf.memory = FitCurve(mp, true, hbm, base.memory);
    comp = AsCurve(cf.compute, base.compute);
    mem = AsCurve(cf.memory, base.memory);
  }
  return cf;
}

// Leave-one-source-out: refits without each source in turn and predicts its
// points; a source alone in its class is predicted by the base curves, the
// prior the profile would price with had the source never been read.
void HoldOutSources(const std::vector<FitPoint>& points, const hw::OpEfficiency& base,
                    double hbm, const hw::EfficiencyCurve& comp, const hw::EfficiencyCurve& mem,
                    ClassFit* cf) {
  std::set<int> sources;
  for (const FitPoint& p : points) sources.insert(p.source);
  std::vector<double> all;
  for (int s : sources) {
    std::vector<FitPoint> rest;
    for (const FitPoint& p : points) {
      if (p.source != s) rest.push_back(p);
    }
    hw::EfficiencyCurve hc = base.compute, hm = base.memory;
    if (!rest.empty()) {
      const ClassFit held = FitOnce(cf->key, rest, base, hbm);
      hc = AsCurve(held.compute, base.compute);
      hm = AsCurve(held.memory, base.memory);
    }
    SourceHoldout h;
    h.source = s;
    h.refitted = !rest.empty();
    std::vector<double> out, in;
    for (const FitPoint& p : points) {
      if (p.source != s) continue;
      out.push_back(std::fabs(PredictSeconds(p, hc, hm, hbm) - p.t_s) / p.t_s);
      in.push_back(std::fabs(PredictSeconds(p, comp, mem, hbm) - p.t_s) / p.t_s);
    }
    h.points = static_cast<int>(out.size());
    h.median_rel_err = Quantile(out, 0.5);
    h.in_sample_median = Quantile(in, 0.5);
    all.insert(all.end(), out.begin(), out.end());
    cf->holdouts.push_back(h);
  }
  cf->held_out_median = all.empty() ? -1 : Quantile(all, 0.5);
}

}  // namespace

double Quantile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = p * (v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - lo) * (v[hi] - v[lo]);
}

double PredictSeconds(const FitPoint& p, const hw::EfficiencyCurve& compute,
                      const hw::EfficiencyCurve& memory, double hbm) {
  return std::max(TermSeconds(p, compute, false, hbm), TermSeconds(p, memory, true, hbm));
}

ClassFit FitClass(const std::string& key, const std::vector<FitPoint>& points,
                  const hw::OpEfficiency& base, double hbm, bool with_loo) {
  ClassFit cf = FitOnce(key, points, base, hbm);
  const hw::EfficiencyCurve comp = AsCurve(cf.compute, base.compute);
  const hw::EfficiencyCurve mem = AsCurve(cf.memory, base.memory);
  std::vector<double> self;
  for (const FitPoint& p : points) {
    self.push_back(std::fabs(PredictSeconds(p, comp, mem, hbm) - p.t_s) / p.t_s);
  }
  cf.fit_median = Quantile(self, 0.5);
  if (!with_loo || points.size() < 2) return cf;
  // Exact leave-one-out up to kExactLooPoints records; past that, each
  // record is predicted by the fit without its fold (record i in fold
  // i mod kLooFolds, interleaving the shapes), which keeps a table of
  // hundreds of records to kLooFolds refits.
  const size_t n = points.size();
  const size_t folds = n <= kExactLooPoints ? n : kLooFolds;
  cf.loo_rel_err.assign(n, 0);
  for (size_t f = 0; f < folds; ++f) {
    std::vector<FitPoint> rest;
    for (size_t j = 0; j < n; ++j) {
      if (j % folds != f) rest.push_back(points[j]);
    }
    const ClassFit loo = FitOnce(key, rest, base, hbm);
    for (size_t i = f; i < n; i += folds) {
      const double pred = PredictSeconds(points[i], AsCurve(loo.compute, base.compute),
                                         AsCurve(loo.memory, base.memory), hbm);
      cf.loo_rel_err[i] = std::fabs(pred - points[i].t_s) / points[i].t_s;
    }
  }
  cf.loo_median = Quantile(cf.loo_rel_err, 0.5);
  cf.loo_p90 = Quantile(cf.loo_rel_err, 0.9);
  HoldOutSources(points, base, hbm, comp, mem, &cf);
  return cf;
}

}  // namespace capplan::calibrate
