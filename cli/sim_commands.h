// Registers the `capplan` subcommands that live in sim/.
#ifndef CAPPLAN_CLI_SIM_COMMANDS_H_
#define CAPPLAN_CLI_SIM_COMMANDS_H_

#include "common/cli.h"

namespace capplan::cli {

void RegisterSimCommands(CommandTable* table);

}  // namespace capplan::cli

#endif  // CAPPLAN_CLI_SIM_COMMANDS_H_
