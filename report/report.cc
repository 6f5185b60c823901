#include "report/report.h"

#include <filesystem>

#include "common/atomic_file.h"
#include "report/formats.h"
#include "report/tables.h"

namespace capplan::report {

Result<std::string> ChooseFormat(const std::string& format_flag, const std::string& out_path) {
  std::string name = format_flag;
  if (name.empty()) {
    const std::string ext = std::filesystem::path(out_path).extension().string();
    if (ext == ".md" || ext == ".markdown") {
      name = "md";
    } else if (ext == ".csv") {
      name = "csv";
    } else if (ext == ".txt") {
      name = "brief";
    } else {
      name = "html";
    }
  }
  CAPPLAN_RETURN_IF_ERROR(ReportFormats().Find(name).status().WithPrefix("report: --format"));
  return name;
}

Result<std::string> RenderReport(std::vector<Summary> results, const std::string& format,
                                 const ReportOptions& options) {
  CAPPLAN_ASSIGN_OR_RETURN(Renderer render, ReportFormats().Find(format));
  CAPPLAN_ASSIGN_OR_RETURN(Analysis a, Analyze(std::move(results), options));
  std::vector<Table> tables = BuildTables(a);
  if (options.calibration) AddCalibrationTables(*options.calibration, &tables);
  return render(a, tables);
}

Result<std::string> LoadAndRender(const std::vector<std::string>& inputs, const std::string& format,
                                  const ReportOptions& options) {
  CAPPLAN_ASSIGN_OR_RETURN(std::vector<Summary> results, LoadResults(inputs));
  return RenderReport(std::move(results), format, options);
}

Status WriteReport(const std::vector<std::string>& inputs, const std::string& out,
                   const std::string& format, const ReportOptions& options) {
  CAPPLAN_ASSIGN_OR_RETURN(std::string fmt, ChooseFormat(format, out));
  CAPPLAN_ASSIGN_OR_RETURN(std::string text, LoadAndRender(inputs, fmt, options));
  return WriteFileAtomic(out, text);
}

}  // namespace capplan::report
