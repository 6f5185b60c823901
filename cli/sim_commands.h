// Registers the `capplan` subcommands that live in sim/.
#ifndef CAPPLAN_CLI_SIM_COMMANDS_H_
#define CAPPLAN_CLI_SIM_COMMANDS_H_

#include "common/cli.h"

namespace capplan {

void RegisterSimCommands(CommandTable* table);

}  // namespace capplan

#endif  // CAPPLAN_CLI_SIM_COMMANDS_H_
