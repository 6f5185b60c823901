// `capplan report`: simulation results in, one planning report out.
#ifndef CAPPLAN_REPORT_REPORT_H_
#define CAPPLAN_REPORT_REPORT_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "report/analysis.h"
#include "report/summary.h"

namespace capplan::report {

// The format named by --format, else by the --out extension (.html/.htm, .md,
// .csv, .txt for brief), else html. Usage error (with "did you mean") for an unknown name.
Result<std::string> ChooseFormat(const std::string& format_flag, const std::string& out_path);

// Renders already-loaded results in `format`.
Result<std::string> RenderReport(std::vector<Summary> results, const std::string& format,
                                 const ReportOptions& options);

// Loads `inputs` (files or result directories) and renders them.
Result<std::string> LoadAndRender(const std::vector<std::string>& inputs, const std::string& format,
                                  const ReportOptions& options);

// Loads `inputs` (files or result directories), renders, and writes `out`
// atomically.
Status WriteReport(const std::vector<std::string>& inputs, const std::string& out,
                   const std::string& format, const ReportOptions& options);

}  // namespace capplan::report

#endif  // CAPPLAN_REPORT_REPORT_H_
