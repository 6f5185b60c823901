// The text `capplan calibrate --runs` prints (calibrate/run_fit.h).
#include <cstdio>
#include <sstream>

#include "calibrate/run_fit.h"

namespace capplan::calibrate {
namespace {

std::string Num(double v) {
  char b[32];
  if (v != 0 && (std::fabs(v) < 1e-3 || std::fabs(v) >= 1e6)) {
    std::snprintf(b, sizeof(b), "%.3g", v);
  } else {
    std::snprintf(b, sizeof(b), "%.4g", v);
  }
  return b;
}

std::string Pct(double predicted, double measured) {
  char b[32];
  std::snprintf(b, sizeof(b), "%+.1f%%", (predicted / measured - 1) * 100);
  return b;
}

void Terms(const RunFitResult& r, std::ostringstream& os) {
  os << "terms (prior -> value; a term the runs cannot identify keeps its prior)\n";
  for (const RunFitTerm& t : r.terms) {
    char line[160];
    const char* unit = t.term.kind == sim::OverlayTermKind::kStepCost ? " s" : "";
    std::snprintf(line, sizeof(line), "  %-44s %10s -> %-10s%s  ", t.term.name.c_str(),
                  Num(t.term.prior).c_str(), Num(t.term.value).c_str(), unit);
    os << line << (t.term.moved ? "moved: " : "kept: ") << t.term.why << "\n";
  }
}

void Rows(const RunFitResult& r, std::ostringstream& os) {
  os << "runs (error = predicted / measured - 1; held-out: predicted by a fit on the other "
     << (r.overlay.held_out_unit == "run" ? "runs" : "concurrencies") << ")\n";
  char head[200];
  std::snprintf(head, sizeof(head), "  %-28s %-26s %10s %10s %8s %10s %8s %9s\n", "run", "metric",
                "measured", "before", "error", "after", "error", "held-out");
  os << head;
  for (const sim::OverlayRunRow& row : r.overlay.rows) {
    char line[240];
    std::snprintf(line, sizeof(line), "  %-28.28s %-26.26s %10s %10s %8s %10s %8s %9s\n",
                  row.label.c_str(), row.metric.c_str(), Num(row.measured).c_str(),
                  Num(row.before).c_str(), Pct(row.before, row.measured).c_str(),
                  Num(row.after).c_str(), Pct(row.after, row.measured).c_str(),
                  row.held_out_after ? Pct(*row.held_out_after, row.measured).c_str() : "-");
    os << line;
  }
}

}  // namespace

std::string FormatRunFit(const RunFitResult& r) {
  std::ostringstream os;
  const sim::CalibrationOverlay& o = r.overlay;
  os << "calibrate --runs: " << o.runs.size() << " run(s) of " << o.model << " on " << o.hardware
     << ", " << o.engine << " " << o.engine_version << "\n";
  Terms(r, os);
  Rows(r, os);
  char line[256];
  std::snprintf(line, sizeof(line), "fitted runs: mean error %.1f%% before, %.1f%% after (%d metric(s))\n",
                r.fit_before_pct, r.fit_after_pct, r.fitted_rows);
  os << line;
  if (r.other_rows > 0) {
    std::snprintf(line, sizeof(line),
                  "runs not fitted: mean error %.1f%% before, %.1f%% after (%d metric(s))\n",
                  r.other_before_pct, r.other_after_pct, r.other_rows);
    os << line;
  }
  if (r.held_out_done) {
    std::snprintf(line, sizeof(line),
                  "leave-one-%s-out: mean error %.1f%% with the priors, %.1f%% with the fit\n",
                  o.held_out_unit.c_str(), o.held_out_before_pct, o.held_out_after_pct);
    os << line;
  }
  for (const auto& [g, b] : o.bands) {
    std::snprintf(line, sizeof(line), "band %-18s x%.3f .. x%.3f (measured / predicted, %d row(s))\n",
                  g.c_str(), b.lo, b.hi, b.rows);
    os << line;
  }
  return os.str();
}

}  // namespace capplan::calibrate
