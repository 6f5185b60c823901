// The report's "Calibrated on your runs" section: what a calibration
// overlay (`capplan calibrate --runs`, read by the CLI and handed over as
// this plain record, so the report stays independent of the simulator)
// changed. Two tables: per run and metric, measured vs predicted with the
// shipped priors and with the overlay (and, where the fit held the run out,
// predicted by a fit on the other runs); per term, its prior, its value and
// whether it moved.
#ifndef CAPPLAN_REPORT_CALIBRATION_SECTION_H_
#define CAPPLAN_REPORT_CALIBRATION_SECTION_H_

#include <optional>
#include <string>
#include <vector>


namespace capplan::report {

struct Table;

struct CalibrationSection {
  std::string origin;  // the overlay file
  std::string engine, engine_version, hardware, model, created;
  int runs = 0;
  struct Term {
    std::string name;
    double prior = 0, value = 0;
    bool moved = false;
    std::string why;
  };
  std::vector<Term> terms;
  struct Row {
    std::string run, metric;
    double measured = 0, before = 0, after = 0;
    std::optional<double> held_out;
  };
  std::vector<Row> rows;
  std::string held_out_unit;
  double held_out_before_pct = 0, held_out_after_pct = 0;
};

// Table ids "calibrated_on_your_runs" and "calibration_terms".
inline constexpr const char* kCalibrationRunsTable = "calibrated_on_your_runs";
inline constexpr const char* kCalibrationTermsTable = "calibration_terms";
// Appends both tables.
void AddCalibrationTables(const CalibrationSection& c, std::vector<Table>* tables);

}  // namespace capplan::report

#endif  // CAPPLAN_REPORT_CALIBRATION_SECTION_H_
