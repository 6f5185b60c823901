// Registers the `capplan` subcommands that live in engine/.
#ifndef CAPPLAN_ENGINE_COMMANDS_H_
#define CAPPLAN_ENGINE_COMMANDS_H_

#include "common/cli.h"

namespace capplan {

void RegisterEngineCommands(CommandTable* table);

}  // namespace capplan

#endif  // CAPPLAN_ENGINE_COMMANDS_H_
