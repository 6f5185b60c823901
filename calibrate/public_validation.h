// `capplan validate --public`: runs the public validation cases in
// validation/cases/ (validation/README.md) -- each a scenario plus the
// numbers a public benchmark or engine log measured -- and compares every
// measured metric with the simulator's prediction.
//
// A case's class says what its numbers are: "step" (one engine iteration or
// a latency benchmark of one batch), "serving" (an end-to-end benchmark
// run) or "energy" (the GPUs' energy per token in a named run). Serving and
// energy rows are validation only: nothing is ever fitted to them.
#ifndef CAPPLAN_CALIBRATE_PUBLIC_VALIDATION_H_
#define CAPPLAN_CALIBRATE_PUBLIC_VALIDATION_H_

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "sim/prediction_intervals.h"

namespace capplan::calibrate {

// One compared (or skipped) metric of one case row.
struct PublicValidationRow {
  std::string case_name, case_class, label, metric;
  std::string measured_kind;  // "reported" or "authors_fit"
  std::string source_url, source_date;
  double measured = 0;
  // Set when the row ran; a skipped row has `skipped` (the reason) instead.
  double predicted = 0, error_pct = 0;  // error = (predicted / measured - 1) * 100
  std::string skipped;
  // What the prediction's band is built from; set when the row ran.
  std::optional<sim::BandInputs> band;
};

// One of a case's `comparisons`: the ratio of one metric between two of its
// rows (INT4 over FP8 weights at the same concurrency, say). A configuration
// change is judged by whether the model moves the metric as much as the
// measurement did, which an absolute error hides when both rows miss alike.
struct PublicComparison {
  std::string case_name, case_class, label, metric, numerator, denominator;
  double measured_ratio = 0;  // numerator's measured value / denominator's
  // Set when both rows ran; otherwise `skipped` says which row did not.
  double predicted_ratio = 0, difference = 0;  // difference = predicted - measured ratio
  std::string skipped;
};

struct PublicClassSummary {
  double mape_pct = 0;  // mean |error_pct| over the rows that ran
  int rows = 0, skipped = 0;
  double mean_abs_ratio_difference = 0;  // mean |difference| over the comparisons that ran
  int comparisons = 0, comparisons_skipped = 0;
};

struct PublicValidation {
  std::string cases_dir;
  std::vector<std::string> case_files;
  std::vector<PublicValidationRow> rows;              // case file order, then row, then metric
  std::vector<PublicComparison> comparisons;          // case file order, then as listed
  std::map<std::string, PublicClassSummary> classes;  // "step", "serving"
};

// Reads every *.json case under `cases_dir` (sorted by name) strictly, parses
// every row's scenario, then runs them. A case whose model card or hardware
// profile (by name) does not exist is reported row by row as skipped
// ("profile h100-sxm not found"), as is a row whose case marks it `skipped`
// (a configuration the scenario format cannot express); any other error -- a
// malformed case, an invalid scenario, a comparison naming a row that does
// not exist -- is a one-line error naming the file and JSON path.
struct PublicValidationOptions {
  // Runs only the cases of this class ("" runs all); the others are still
  // read and checked.
  std::string only_class;
  // Profile name -> file to load in its place (calibrate/step_fit.h prices
  // the step cases on candidate profiles this way).
  std::map<std::string, std::string> hardware_files;
  // Called on every row's scenario document (after `set`) before it is
  // parsed; calibrate/step_fit.h sets candidate engine step costs this way.
  std::function<Status(nlohmann::json* scenario)> adjust_scenario;
  // Runs only the rows it keeps (case name, row label); the others are
  // listed as skipped ("not selected"). calibrate/run_fit.h fits on a subset.
  std::function<bool(const std::string& case_name, const std::string& label)> keep_row;
};
Result<PublicValidation> RunPublicValidation(const std::string& cases_dir,
                                             const PublicValidationOptions& options = {});

// RunPublicValidation on the named case files, in the order given
// (`capplan validate CASE...`, an imported case among them).
Result<PublicValidation> RunValidationCases(const std::vector<std::string>& case_files,
                                            const PublicValidationOptions& options = {});

// The metrics a `simulate` case may measure, by their summary key
// (schema/run_summary.h): the throughputs, {mean,median,p90,p99} of TTFT,
// TPOT, ITL and E2E latency, and kv_capacity_tokens (the instance's KV pool,
// which an engine's start-up log states).
const std::vector<std::string>& ValidationCaseMetrics();

// The table `capplan validate --public` prints (each case's comparisons
// after its rows), its --json form, and the --out files: one CSV of rows,
// one CSV of comparisons (a CSV holds one table), and the Markdown page.
std::string FormatPublicValidation(const PublicValidation& v);
nlohmann::json PublicValidationToJson(const PublicValidation& v);
std::string PublicValidationCsv(const PublicValidation& v);
std::string PublicValidationComparisonsCsv(const PublicValidation& v);
std::string PublicValidationMarkdown(const PublicValidation& v);

// The prediction bands the simulator reports (validation/intervals.json),
// fitted to these rows: calibrate/intervals.h.
Result<nlohmann::json> PredictionIntervalsJson(const PublicValidation& v);

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_PUBLIC_VALIDATION_H_
