// `capplan simulate` on a PD scenario (one with `pd` instead of
// `deployment`): sim/commands.cc routes such files here.
#ifndef CAPPLAN_SIM_PD_PD_COMMAND_H_
#define CAPPLAN_SIM_PD_PD_COMMAND_H_

#include <string>
#include <vector>

#include "common/cli.h"
#include "common/status.h"

namespace capplan {

struct PdCommandOptions {
  std::string out_dir;    // "" = none: else DIR/summary.json, DIR/requests.csv
  std::string trace_out;  // "" = none
  bool json = false;
};

// True when `path` holds a PD scenario (false, not an error, when it cannot
// be read: the ordinary reader reports that).
bool IsPdScenarioFile(const std::string& path);
Status RunPdSimulateCommand(const std::string& path, const std::vector<std::string>& sets,
                            const PdCommandOptions& options, CommandContext& ctx);

}  // namespace capplan

#endif  // CAPPLAN_SIM_PD_PD_COMMAND_H_
