// Registers `capplan sweep` and `capplan search` (sim/sweep/README.md).
#ifndef CAPPLAN_CLI_SWEEP_COMMANDS_H_
#define CAPPLAN_CLI_SWEEP_COMMANDS_H_

#include "common/cli.h"

namespace capplan::cli {

void RegisterSweepCommands(CommandTable* table);

}  // namespace capplan::cli

#endif  // CAPPLAN_CLI_SWEEP_COMMANDS_H_
