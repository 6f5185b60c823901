// Registers the `capplan` subcommands that live in models/ (capacity).
#ifndef CAPPLAN_CLI_MODELS_COMMANDS_H_
#define CAPPLAN_CLI_MODELS_COMMANDS_H_

#include "common/cli.h"

namespace capplan::cli {

void RegisterModelsCommands(CommandTable* table);

}  // namespace capplan::cli

#endif  // CAPPLAN_CLI_MODELS_COMMANDS_H_
