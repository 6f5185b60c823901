// What a planning report derives from the results: configurations (results
// that differ only in offered load), cost, the ratio to a baseline, what
// binds each point and the Pareto front of throughput per GPU against
// interactivity. Pure functions of the summaries, so every format shows the
// same numbers.
#ifndef CAPPLAN_REPORT_ANALYSIS_H_
#define CAPPLAN_REPORT_ANALYSIS_H_

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "report/calibration_section.h"
#include "report/summary.h"

namespace capplan::report {

struct ReportOptions {
  std::string title = "capplan planning report";
  // Baseline configurations (labels or result names). Each configuration is
  // compared with the nearest baseline listed before it in the inputs (the
  // first baseline when none precedes it); empty = the first configuration.
  std::vector<std::string> baselines;
  std::optional<double> usd_per_gpu_hour;  // overrides the summaries' price
  // Which tokens the Pareto chart's y axis counts: "output" or "total"
  // (input + output); readers take "throughput" as output-only unless told
  // (https://github.com/SemiAnalysisAI/InferenceX/issues/293).
  std::string pareto_tokens = "output";
  // A calibration overlay the results ran with: its own section.
  std::optional<CalibrationSection> calibration;
};

// Cost of one result at a GPU price (USD per GPU-hour).
// Per million tokens by schema::CostPerMillionTokens (+infinity for a result
// that produced no tokens).
struct Cost {
  double usd_per_gpu_hour = 0;
  double usd_per_million_output = 0;  // all GPU time charged to output tokens
  double usd_per_million_total = 0;   // charged to input + output tokens
};

// What limits one result, and how far each other limit is.
struct Binding {
  std::string binds;       // "KV capacity", "HBM bandwidth", "compute", "communication",
                           // "overhead", "SLO", or "unknown" when the summary lacks shares
  std::string headroom;    // "KV 94% full; HBM-bound 71% of step time; ..."
  std::string next_limit;  // "SLO (p99 TPOT at 84% of 50 ms, 16% headroom)"
};
Binding AnalyzeBinding(const Summary& s);

struct Point {
  const Summary* summary = nullptr;
  int config = 0;                    // index into Analysis::configs
  std::optional<Cost> cost;          // absent without a GPU price
  double tokens_per_s_per_user = 0;  // 1000 / median TPOT (ms); 0 when unknown
  double pareto_y = 0;               // tokens/s per GPU as counted by pareto_tokens
  bool on_pareto_front = false;
  // Relative change of cost per output / total token vs the baseline point
  // (-0.31 = 31% cheaper); absent for the baseline itself or without prices.
  std::optional<double> output_cost_change, total_cost_change;
  int baseline_point = -1;  // index into Analysis::points; -1 for baselines
  Binding binding;
};

struct Config {
  std::string label;  // full name: the result's name plus what differs
  // What tables and charts print: the label itself when every label is
  // short, else A, B, C ... (the legend table maps each back to its label).
  std::string short_label;
  int baseline = 0;         // index of the configuration this one is compared with
  std::vector<int> points;  // indices into Analysis::points, by concurrency
  const Summary* first = nullptr;
};

// Points and configurations point into `results`; moving keeps those
// addresses (vector buffers move), copying would not, hence move-only.
struct Analysis {
  Analysis() = default;
  Analysis(Analysis&&) = default;
  Analysis& operator=(Analysis&&) = default;
  Analysis(const Analysis&) = delete;
  Analysis& operator=(const Analysis&) = delete;

  ReportOptions options;
  std::vector<Summary> results;
  std::vector<Config> configs;
  std::vector<Point> points;          // one per result, in input order
  std::vector<int> baseline_configs;  // in input order
  std::string concurrency_source;     // how the x of throughput-vs-concurrency was read
};

// Groups, labels, prices and compares. Usage error for an unknown baseline
// (with "did you mean") or a non-positive price.
Result<Analysis> Analyze(std::vector<Summary> results, const ReportOptions& options);

// Labels of at most this many characters are printed as they are.
inline constexpr size_t kMaxShortLabel = 12;
// 0 -> "A", 25 -> "Z", 26 -> "AA".
std::string LetterLabel(size_t index);

// "-31% cost per output token vs BF16 KV" style phrase.
std::string ChangePhrase(double change, const std::string& what, const std::string& baseline);

}  // namespace capplan::report

#endif  // CAPPLAN_REPORT_ANALYSIS_H_
