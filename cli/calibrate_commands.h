// Registers the `capplan` subcommands that live in calibrate/.
#ifndef CAPPLAN_CLI_CALIBRATE_COMMANDS_H_
#define CAPPLAN_CLI_CALIBRATE_COMMANDS_H_

#include "common/cli.h"

namespace capplan::cli {

void RegisterCalibrateCommands(CommandTable* table);

}  // namespace capplan::cli

#endif  // CAPPLAN_CLI_CALIBRATE_COMMANDS_H_
