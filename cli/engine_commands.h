// Registers the `capplan` subcommands that live in engine/.
#ifndef CAPPLAN_CLI_ENGINE_COMMANDS_H_
#define CAPPLAN_CLI_ENGINE_COMMANDS_H_

#include "common/cli.h"

namespace capplan::cli {

void RegisterEngineCommands(CommandTable* table);

}  // namespace capplan::cli

#endif  // CAPPLAN_CLI_ENGINE_COMMANDS_H_
