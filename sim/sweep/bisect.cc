#include "sim/sweep/bisect.h"

#include <cmath>
#include <string>

namespace capplan::sim::sweep {

Result<BisectResult> BisectRate(const BisectOptions& o,
                                const std::function<Result<RateProbe>(double)>& probe) {
  if (!(o.min_rate > 0) || !(o.max_rate >= o.min_rate) || !std::isfinite(o.max_rate)) {
    return Status::Usage("request rate range [" + std::to_string(o.min_rate) + ", " +
                         std::to_string(o.max_rate) + "] must satisfy 0 < min <= max");
  }
  if (!(o.rel_tol > 0)) return Status::Usage("request rate rel_tol must be > 0");
  BisectResult r;
  auto run = [&](double rate) -> Result<RateProbe> {
    ++r.probes;
    CAPPLAN_ASSIGN_OR_RETURN(RateProbe p, probe(rate));
    p.rate = rate;
    return p;
  };
  CAPPLAN_ASSIGN_OR_RETURN(RateProbe top, run(o.max_rate));
  if (top.met) {
    r.feasible = r.hit_max = true;
    r.best = std::move(top);
    return r;
  }
  r.first_fail = std::move(top);
  if (o.min_rate == o.max_rate) return r;
  CAPPLAN_ASSIGN_OR_RETURN(RateProbe bottom, run(o.min_rate));
  if (!bottom.met) {
    r.first_fail = std::move(bottom);
    return r;
  }
  r.feasible = true;
  r.best = std::move(bottom);
  while (r.first_fail->rate - r.best->rate > o.rel_tol * r.best->rate &&
         r.probes < o.max_probes) {
    const double mid = 0.5 * (r.best->rate + r.first_fail->rate);
    CAPPLAN_ASSIGN_OR_RETURN(RateProbe p, run(mid));
    if (p.met) {
      r.best = std::move(p);
    } else {
      r.first_fail = std::move(p);
    }
  }
  return r;
}

}  // namespace capplan::sim::sweep
