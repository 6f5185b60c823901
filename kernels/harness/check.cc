#include "kernels/harness/check.h"

#include <cmath>
#include <limits>
#include <sstream>

namespace capplan::kernels {

CheckResult Check(const float* out, const float* ref, size_t n, double atol, double rtol,
                  int max_report) {
  CheckResult r;
  std::ostringstream rep;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(ref[i])) continue;
    ++r.checked;
    const double o = out[i], e = ref[i];
    const double tol = atol + rtol * std::fabs(e);
    const double err = std::fabs(o - e);
    bool bad = false;
    if (std::isnan(o)) {
      ++r.unwritten;
      bad = true;
      r.max_abs_err = std::numeric_limits<double>::infinity();
    } else if (!(err <= tol)) {  // also catches Inf
      bad = true;
    }
    if (!std::isnan(o)) {
      r.max_abs_err = std::max(r.max_abs_err, err);
      if (e != 0.0) r.max_rel_err = std::max(r.max_rel_err, err / std::fabs(e));
    }
    if (bad) {
      if (static_cast<int>(r.mismatches) < max_report) {
        rep << "[" << i << "] out=" << o << " ref=" << e << " |err|=" << err << " tol=" << tol
            << (std::isnan(o) ? " (unwritten: still poison)" : "") << "\n";
      }
      ++r.mismatches;
    }
  }
  r.pass = r.mismatches == 0;
  if (!r.pass) {
    rep << r.mismatches << " of " << r.checked << " elements out of tolerance (atol=" << atol
        << ", rtol=" << rtol << "), " << r.unwritten << " unwritten\n";
  }
  r.report = rep.str();
  return r;
}

CheckResult Check(const std::vector<float>& out, const std::vector<float>& ref, double atol,
                  double rtol, int max_report) {
  if (out.size() != ref.size()) {
    CheckResult r;
    r.pass = false;
    r.report = "size mismatch: out has " + std::to_string(out.size()) + " elements, ref " +
               std::to_string(ref.size()) + "\n";
    return r;
  }
  return Check(out.data(), ref.data(), out.size(), atol, rtol, max_report);
}

void Poison(float* data, size_t n) {
  for (size_t i = 0; i < n; ++i) data[i] = std::numeric_limits<float>::quiet_NaN();
}

double RelativeL2Error(const float* out, const float* ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(out[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace capplan::kernels
