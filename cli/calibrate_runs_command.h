// `capplan calibrate --runs CASE... [--out OVERLAY.json] [--hold TERM]...
// [--json]`: calibrate/run_fit.h on a user's imported runs.
#ifndef CAPPLAN_CLI_CALIBRATE_RUNS_COMMAND_H_
#define CAPPLAN_CLI_CALIBRATE_RUNS_COMMAND_H_

#include <string>
#include <vector>

#include "common/cli.h"
#include "common/status.h"
#include "report/calibration_section.h"

namespace capplan::cli {

// True when `args` ask for it (they name --runs).
bool WantsCalibrateRuns(const std::vector<std::string>& args);
Status RunCalibrateRuns(const std::vector<std::string>& args, CommandContext& ctx);

// An overlay file read (strictly) into the report's section
// (`capplan report --calibration OVERLAY.json`).
Result<report::CalibrationSection> ReadCalibrationSection(const std::string& path);

}  // namespace capplan::cli

#endif  // CAPPLAN_CLI_CALIBRATE_RUNS_COMMAND_H_
