#include "report/calibration_section.h"

#include <cstdio>

#include "report/tables.h"

namespace capplan::report {
namespace {

std::string Num(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), (v != 0 && (v < 1e-3 || v >= 1e6)) ? "%.3g" : "%.4g", v);
  return b;
}

std::string Err(double predicted, double measured) {
  char b[32];
  std::snprintf(b, sizeof(b), "%+.1f%%", (predicted / measured - 1) * 100);
  return b;
}

Table RunsTable(const CalibrationSection& c) {
  Table t;
  t.id = kCalibrationRunsTable;
  t.title = "Calibrated on your runs";
  char note[512];
  std::snprintf(note, sizeof(note),
                "%s: %d run(s) of %s on %s with %s %s (created %s). Before: the shipped "
                "profile's prediction; after: with the overlay; held-out: predicted by a fit "
                "on the other %s. Leave-one-%s-out mean error: %.1f%% before, %.1f%% after.",
                c.origin.c_str(), c.runs, c.model.c_str(), c.hardware.c_str(), c.engine.c_str(),
                c.engine_version.c_str(), c.created.c_str(),
                c.held_out_unit == "run" ? "runs" : "concurrencies", c.held_out_unit.c_str(),
                c.held_out_before_pct, c.held_out_after_pct);
  t.note = note;
  t.columns = {"run",   "metric", "measured", "before", "before error",
               "after", "after error", "held-out error"};
  for (const CalibrationSection::Row& r : c.rows) {
    t.rows.push_back({r.run, r.metric, Num(r.measured), Num(r.before), Err(r.before, r.measured),
                      Num(r.after), Err(r.after, r.measured),
                      r.held_out ? Err(*r.held_out, r.measured) : "-"});
  }
  return t;
}

Table TermsTable(const CalibrationSection& c) {
  Table t;
  t.id = kCalibrationTermsTable;
  t.title = "Calibration terms";
  t.note = "Each term starts at the shipped prior; one the runs cannot identify keeps it and "
           "says why. Step costs in seconds, scales as ratios.";
  t.columns = {"term", "prior", "value", "moved", "why"};
  for (const CalibrationSection::Term& term : c.terms) {
    t.rows.push_back(
        {term.name, Num(term.prior), Num(term.value), term.moved ? "yes" : "no", term.why});
  }
  return t;
}

}  // namespace

void AddCalibrationTables(const CalibrationSection& c, std::vector<Table>* tables) {
  tables->push_back(RunsTable(c));
  tables->push_back(TermsTable(c));
}

}  // namespace capplan::report
