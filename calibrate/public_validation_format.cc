// The public validation's outputs: the table `capplan validate --public`
// prints, its JSON, the two CSV files and the Markdown page, all from one
// PublicValidation (public_validation.h).
#include "calibrate/public_validation.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace capplan::calibrate {

namespace {

// One number through a printf format that takes one double, cut to N - 1
// characters.
template <size_t N>
std::string Printf(const char* format, double v) {
  char b[N];
  std::snprintf(b, sizeof(b), format, v);
  return b;
}

std::string Num(double v) {
  const double a = std::fabs(v);
  return Printf<64>(a >= 1000 ? "%.1f" : a >= 10 ? "%.2f" : "%.3f", v);
}

std::string Pct(double v) { return Printf<32>("%+.1f%%", v); }

std::string MetricLabel(const PublicValidationRow& r) {
  return r.metric + (r.measured_kind == "authors_fit" ? " (fit)" : "");
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

std::string ClassLine(const std::string& cls, const PublicClassSummary& s) {
  char b[160];
  if (s.rows == 0) {
    std::snprintf(b, sizeof(b), "MAPE %-8s      -   (0 rows ran, %d skipped)", cls.c_str(),
                  s.skipped);
  } else {
    std::snprintf(b, sizeof(b), "MAPE %-8s %6.1f%%  over %d rows (%d skipped)", cls.c_str(),
                  s.mape_pct, s.rows, s.skipped);
  }
  return b;
}

}  // namespace

namespace {

std::string Ratio(double v) { return Printf<32>("%.3f", v); }

std::string Diff(double v) { return Printf<32>("%+.3f", v); }

std::vector<const PublicComparison*> ComparisonsOf(const PublicValidation& v,
                                                   const std::string& case_name) {
  std::vector<const PublicComparison*> out;
  for (const auto& k : v.comparisons) {
    if (k.case_name == case_name) out.push_back(&k);
  }
  return out;
}

// The comparisons of one case as an indented block under its rows.
void FormatComparisons(const PublicValidation& v, const std::string& case_name, std::ostream& os) {
  const auto ks = ComparisonsOf(v, case_name);
  if (ks.empty()) return;
  size_t wl = 10, wm = 6;
  for (const auto* k : ks) {
    wl = std::max(wl, k->label.size());
    wm = std::max(wm, k->metric.size());
  }
  os << "  comparisons of " << case_name
     << " (ratio = numerator row / denominator row; difference = predicted - measured)\n";
  char b[512];
  std::snprintf(b, sizeof(b), "  %-*s  %-*s  %9s  %9s  %10s\n", static_cast<int>(wl), "comparison",
                static_cast<int>(wm), "metric", "measured", "predicted", "difference");
  os << b;
  for (const auto* k : ks) {
    std::snprintf(b, sizeof(b), "  %-*s  %-*s  %9s  ", static_cast<int>(wl), k->label.c_str(),
                  static_cast<int>(wm), k->metric.c_str(), Ratio(k->measured_ratio).c_str());
    os << b;
    if (k->skipped.empty()) {
      std::snprintf(b, sizeof(b), "%9s  %10s\n", Ratio(k->predicted_ratio).c_str(),
                    Diff(k->difference).c_str());
    } else {
      std::snprintf(b, sizeof(b), "%9s  skipped: %s\n", "-", k->skipped.c_str());
    }
    os << b;
  }
}

std::string ComparisonClassLine(const std::string& cls, const PublicClassSummary& s) {
  char b[200];
  if (s.comparisons == 0) {
    std::snprintf(b, sizeof(b), "ratio diff %-8s    -   (0 comparisons ran, %d skipped)",
                  cls.c_str(), s.comparisons_skipped);
  } else {
    std::snprintf(b, sizeof(b),
                  "ratio diff %-8s %5.3f  mean |predicted - measured ratio| over %d "
                  "comparisons (%d skipped)",
                  cls.c_str(), s.mean_abs_ratio_difference, s.comparisons, s.comparisons_skipped);
  }
  return b;
}

}  // namespace

std::string FormatPublicValidation(const PublicValidation& v) {
  std::ostringstream os;
  int ran = 0, compared = 0;
  for (const auto& r : v.rows) ran += r.skipped.empty();
  for (const auto& k : v.comparisons) compared += k.skipped.empty();
  // Named case files (`validate CASE...`) have no folder to name.
  if (v.cases_dir.empty()) {
    os << "validation: " << v.case_files.size() << " case file(s), ";
  } else {
    os << "public validation: " << v.case_files.size() << " cases in " << v.cases_dir << ", ";
  }
  os << v.rows.size() << " rows (" << ran << " compared, " << v.rows.size() - ran << " skipped), "
     << v.comparisons.size() << " comparisons (" << compared << " compared)\n";
  size_t wc = 4, wl = 3, wm = 6;
  for (const auto& r : v.rows) {
    wc = std::max(wc, r.case_name.size());
    wl = std::max(wl, r.label.size());
    wm = std::max(wm, MetricLabel(r).size());
  }
  char b[512];
  std::snprintf(b, sizeof(b), "%-*s  %-7s  %-*s  %-*s  %12s  %12s  %8s\n", static_cast<int>(wc),
                "case", "class", static_cast<int>(wl), "row", static_cast<int>(wm), "metric",
                "measured", "predicted", "error");
  os << b;
  for (size_t i = 0; i < v.rows.size(); ++i) {
    const auto& r = v.rows[i];
    std::snprintf(b, sizeof(b), "%-*s  %-7s  %-*s  %-*s  %12s  ", static_cast<int>(wc),
                  r.case_name.c_str(), r.case_class.c_str(), static_cast<int>(wl), r.label.c_str(),
                  static_cast<int>(wm), MetricLabel(r).c_str(), Num(r.measured).c_str());
    os << b;
    if (!r.skipped.empty()) {
      std::snprintf(b, sizeof(b), "%12s  skipped: %s\n", "-", r.skipped.c_str());
    } else {
      std::snprintf(b, sizeof(b), "%12s  %8s\n", Num(r.predicted).c_str(),
                    Pct(r.error_pct).c_str());
    }
    os << b;
    if (i + 1 == v.rows.size() || v.rows[i + 1].case_name != r.case_name) {
      FormatComparisons(v, r.case_name, os);
    }
  }
  for (const auto& [cls, s] : v.classes) os << ClassLine(cls, s) << "\n";
  for (const auto& [cls, s] : v.classes) {
    if (s.comparisons + s.comparisons_skipped > 0) os << ComparisonClassLine(cls, s) << "\n";
  }
  return os.str();
}

namespace {

// The predicted side of a row or comparison: its values, or, when it was
// skipped, nulls in their place and the reason.
void AddPredicted(const std::string& skipped,
                  std::initializer_list<std::pair<const char*, double>> values, nlohmann::json* j) {
  for (const auto& [key, value] : values) {
    (*j)[key] = skipped.empty() ? nlohmann::json(value) : nlohmann::json(nullptr);
  }
  if (!skipped.empty()) (*j)["skipped"] = skipped;
}

nlohmann::json RowJson(const PublicValidationRow& r) {
  nlohmann::json j = {{"case", r.case_name},
                      {"class", r.case_class},
                      {"row", r.label},
                      {"metric", r.metric},
                      {"measured", r.measured},
                      {"measured_kind", r.measured_kind},
                      {"source_url", r.source_url},
                      {"source_date", r.source_date}};
  AddPredicted(r.skipped, {{"predicted", r.predicted}, {"error_pct", r.error_pct}}, &j);
  return j;
}

nlohmann::json ComparisonJson(const PublicComparison& k) {
  nlohmann::json j = {{"case", k.case_name},
                      {"class", k.case_class},
                      {"comparison", k.label},
                      {"metric", k.metric},
                      {"numerator", k.numerator},
                      {"denominator", k.denominator},
                      {"measured_ratio", k.measured_ratio}};
  AddPredicted(k.skipped, {{"predicted_ratio", k.predicted_ratio}, {"difference", k.difference}},
               &j);
  return j;
}

nlohmann::json MeanOrNull(int n, double mean) { return n > 0 ? nlohmann::json(mean) : nullptr; }

}  // namespace

nlohmann::json PublicValidationToJson(const PublicValidation& v) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : v.rows) rows.push_back(RowJson(r));
  nlohmann::json comparisons = nlohmann::json::array();
  for (const auto& k : v.comparisons) comparisons.push_back(ComparisonJson(k));
  nlohmann::json classes = nlohmann::json::object();
  for (const auto& [cls, s] : v.classes) {
    classes[cls] = {
        {"mape_pct", MeanOrNull(s.rows, s.mape_pct)},
        {"rows", s.rows},
        {"skipped", s.skipped},
        {"mean_abs_ratio_difference", MeanOrNull(s.comparisons, s.mean_abs_ratio_difference)},
        {"comparisons", s.comparisons},
        {"comparisons_skipped", s.comparisons_skipped}};
  }
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : v.case_files) files.push_back(f);
  return {{"format", "capplan.public_validation.v1"},
          {"cases", files},
          {"rows", rows},
          {"comparisons", comparisons},
          {"classes", classes}};
}

std::string PublicValidationCsv(const PublicValidation& v) {
  std::ostringstream os;
  os << "case,class,row,metric,measured_kind,measured,predicted,error_pct,status,source_url\n";
  char b[64];
  for (const auto& r : v.rows) {
    os << CsvField(r.case_name) << "," << r.case_class << "," << CsvField(r.label) << ","
       << r.metric << "," << r.measured_kind << ",";
    std::snprintf(b, sizeof(b), "%.6g", r.measured);
    os << b << ",";
    if (r.skipped.empty()) {
      std::snprintf(b, sizeof(b), "%.6g,%.3f", r.predicted, r.error_pct);
      os << b << ",ok,";
    } else {
      os << ",," << CsvField("skipped: " + r.skipped) << ",";
    }
    os << CsvField(r.source_url) << "\n";
  }
  return os.str();
}

std::string PublicValidationComparisonsCsv(const PublicValidation& v) {
  std::ostringstream os;
  os << "case,class,comparison,metric,numerator,denominator,measured_ratio,predicted_ratio,"
        "difference,status\n";
  char b[96];
  for (const auto& k : v.comparisons) {
    os << CsvField(k.case_name) << "," << k.case_class << "," << CsvField(k.label) << ","
       << k.metric << "," << CsvField(k.numerator) << "," << CsvField(k.denominator) << ",";
    std::snprintf(b, sizeof(b), "%.6g,", k.measured_ratio);
    os << b;
    if (k.skipped.empty()) {
      std::snprintf(b, sizeof(b), "%.6g,%.6g,ok\n", k.predicted_ratio, k.difference);
      os << b;
    } else {
      os << ",," << CsvField("skipped: " + k.skipped) << "\n";
    }
  }
  return os.str();
}

namespace {

void MarkdownComparisons(const PublicValidation& v, const std::string& case_name,
                         std::ostream& os) {
  const auto ks = ComparisonsOf(v, case_name);
  if (ks.empty()) return;
  os << "\nComparisons (ratio = numerator row / denominator row; difference = predicted - "
        "measured ratio):\n\n"
     << "| comparison | metric | numerator | denominator | measured ratio | predicted ratio | "
        "difference |\n|---|---|---|---|---|---|---|\n";
  for (const auto* k : ks) {
    os << "| " << k->label << " | " << k->metric << " | " << k->numerator << " | " << k->denominator
       << " | " << Ratio(k->measured_ratio) << " | ";
    if (k->skipped.empty()) {
      os << Ratio(k->predicted_ratio) << " | " << Diff(k->difference) << " |\n";
    } else {
      os << "- | skipped: " << k->skipped << " |\n";
    }
  }
}

}  // namespace

std::string PublicValidationMarkdown(const PublicValidation& v) {
  std::ostringstream os;
  os << "# Public validation\n\n"
     << "Written by `capplan validate --public`: every case in `validation/cases/` "
        "(validation/README.md) run through the simulator and compared with the public "
        "measurement. Error = predicted / measured - 1; a comparison's difference = predicted "
        "ratio - measured ratio. Serving rows are validation only: nothing is fitted to them.\n\n"
     << "| class | MAPE | rows compared | rows skipped | mean abs ratio difference | "
        "comparisons | comparisons skipped |\n|---|---|---|---|---|---|---|\n";
  char b[64];
  for (const auto& [cls, s] : v.classes) {
    std::snprintf(b, sizeof(b), "%.1f%%", s.mape_pct);
    os << "| " << cls << " | " << (s.rows > 0 ? b : "-") << " | " << s.rows << " | " << s.skipped
       << " | " << (s.comparisons > 0 ? Ratio(s.mean_abs_ratio_difference) : "-") << " | "
       << s.comparisons << " | " << s.comparisons_skipped << " |\n";
  }
  for (size_t i = 0; i < v.rows.size(); ++i) {
    const auto& r = v.rows[i];
    if (i == 0 || v.rows[i - 1].case_name != r.case_name) {
      os << "\n## " << r.case_name << " (" << r.case_class << ")\n\nSource: <" << r.source_url
         << "> (" << r.source_date << ")"
         << (r.measured_kind == "authors_fit"
                 ? "; measured values are the authors' fit, not single measurements"
                 : "")
         << ".\n\n| row | metric | measured | predicted | error |\n|---|---|---|---|---|\n";
    }
    os << "| " << r.label << " | " << r.metric << " | " << Num(r.measured) << " | ";
    if (r.skipped.empty()) {
      os << Num(r.predicted) << " | " << Pct(r.error_pct) << " |\n";
    } else {
      os << "- | skipped: " << r.skipped << " |\n";
    }
    if (i + 1 == v.rows.size() || v.rows[i + 1].case_name != r.case_name) {
      MarkdownComparisons(v, r.case_name, os);
    }
  }
  return os.str();
}

}  // namespace capplan::calibrate
