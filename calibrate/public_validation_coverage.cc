// `capplan validate --public`'s band coverage (calibrate/intervals.h): each
// case's rows judged by bands fitted without that case.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "calibrate/fit.h"
#include "calibrate/intervals.h"

namespace capplan::calibrate {

namespace {

void Count(CoverageCell* c, bool covered, double half) {
  ++c->rows;
  c->covered += covered ? 1 : 0;
  c->half_widths.push_back(half);
}

// The class that priced most of a row's time.
std::string MainProvenance(const sim::BandInputs& in) {
  int best = 0;
  for (int i = 1; i < sim::kNumOpProvenances; ++i) {
    if (in.share[i] > in.share[best]) best = i;
  }
  return sim::kOpProvenanceNames[best];
}

std::string RegimeName(const sim::BandInputs& in) {
  std::string out;
  for (int k = 0; k < sim::kNumRegimes; ++k) {
    if (!in.regime[k]) continue;
    out += (out.empty() ? "" : "+") + std::string(sim::kRegimeNames[k]);
  }
  return out.empty() ? "none" : out;
}

// The band a typical row gets, as the factor it spans either side.
std::string Band(const CoverageCell& c) {
  const double factor = c.half_widths.empty() ? 1 : std::exp(Quantile(c.half_widths, 0.5));
  char buf[32];
  std::snprintf(buf, sizeof(buf), "x/%.2f", factor);
  return buf;
}

std::string Line(const std::string& a, const std::string& b, const CoverageCell& c,
                 const CoverageCell* in_sample) {
  char buf[160];
  const double pct = c.rows > 0 ? 100.0 * c.covered / c.rows : 0;
  std::snprintf(buf, sizeof(buf), "%-9s %-24s %5d  %7.1f%%", a.c_str(), b.c_str(), c.rows, pct);
  std::string out = buf;
  if (in_sample != nullptr) {
    std::snprintf(buf, sizeof(buf), "  %8.1f%%",
                  in_sample->rows > 0 ? 100.0 * in_sample->covered / in_sample->rows : 0);
    out += buf;
  }
  std::snprintf(buf, sizeof(buf), "   %-11s", Band(c).c_str());
  out += buf;
  if (in_sample != nullptr) out += " " + Band(*in_sample);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out + "\n";
}

const CoverageCell* Find(const std::map<std::string, CoverageCell>& m, const std::string& key) {
  const auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

}  // namespace

BandCoverage LeaveOneCaseOutCoverage(const std::vector<BandRow>& rows,
                                     const BandPriorSource& src) {
  BandCoverage out;
  std::set<std::string> cases;
  for (const BandRow& r : rows) cases.insert(r.case_name);
  out.cases = static_cast<int>(cases.size());
  const sim::BandModel all = FitBandModel(rows, BandPriors(src, rows));
  for (const std::string& name : cases) {
    const sim::BandModel m = FitBandModel(rows, BandPriors(src, rows, name), name);
    for (const BandRow& r : rows) {
      if (r.case_name != name) continue;
      const std::string group = sim::kBandGroupNames[static_cast<int>(r.group)];
      const bool in = Covered(m, r);
      const double half = BandHalfWidth(m, r);
      for (const std::string& g : {group, std::string("all")}) {
        Count(&out.loo[{r.case_class, g}], in, half);
        Count(&out.in_sample[{r.case_class, g}], Covered(all, r), BandHalfWidth(all, r));
      }
      if (r.case_class != kBandFitClass) continue;
      Count(&out.by_provenance[MainProvenance(r.inputs)], in, half);
      Count(&out.by_provenance_in_sample[MainProvenance(r.inputs)], Covered(all, r),
            BandHalfWidth(all, r));
      Count(&out.by_regime[RegimeName(r.inputs)], in, half);
    }
  }
  return out;
}

std::string FormatBandCoverage(const BandCoverage& c) {
  std::ostringstream os;
  os << "prediction bands, nominal 80%: coverage leave-one-case-out over " << c.cases
     << " cases (each case's rows judged by bands fitted without it; in-sample for comparison)\n";
  os << "class     metric                    rows  covered  in-sample   median band (held out, "
        "in-sample)\n";
  for (const auto& [key, cell] : c.loo) {
    const auto it = c.in_sample.find(key);
    os << Line(key.first, key.second, cell, it == c.in_sample.end() ? nullptr : &it->second);
  }
  os << "  " << kBandFitClass
     << " rows by what priced most of their time (leave-one-case-out; in-sample)\n";
  for (const auto& [name, cell] : c.by_provenance) {
    os << Line("", name, cell, Find(c.by_provenance_in_sample, name));
  }
  os << "  " << kBandFitClass << " rows by regime (leave-one-case-out)\n";
  for (const auto& [name, cell] : c.by_regime) os << Line("", name, cell, nullptr);
  return os.str();
}

Result<std::string> PublicValidationCoverage(const PublicValidation& v) {
  const std::vector<BandRow> rows = BandRows(v);
  if (rows.empty()) return std::string();
  CAPPLAN_ASSIGN_OR_RETURN(BandPriorSource src, ProfilePrior());
  return FormatBandCoverage(LeaveOneCaseOutCoverage(rows, src));
}

}  // namespace capplan::calibrate
