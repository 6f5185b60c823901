// Registers the `capplan` subcommands that live in report/.
#ifndef CAPPLAN_CLI_REPORT_COMMANDS_H_
#define CAPPLAN_CLI_REPORT_COMMANDS_H_

#include "common/cli.h"

namespace capplan {

void RegisterReportCommands(CommandTable* table);

}  // namespace capplan

#endif  // CAPPLAN_CLI_REPORT_COMMANDS_H_
