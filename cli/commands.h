// The `capplan` command groups: each registers its subcommands (flags and
// output) in its own file over its domain library; the mains (cli/main.cc,
// cli/engine_main.cc, python/capplan_module.cc) pick the groups they serve.
#ifndef CAPPLAN_CLI_COMMANDS_H_
#define CAPPLAN_CLI_COMMANDS_H_

#include "common/cli.h"

namespace capplan::cli {

// models/ (capacity): cli/models_commands.cc.
void RegisterModelsCommands(CommandTable* table);
// sim/ (simulate, and sweep, search and launch through RegisterSweepCommands
// and RegisterLaunchCommand): cli/sim_commands.cc.
void RegisterSimCommands(CommandTable* table);
// `launch` (the engine command of a scenario or a search's winner):
// cli/launch_command.cc.
void RegisterLaunchCommand(CommandTable* table);
// `sweep` and `search` (sim/sweep/README.md): cli/sweep_commands.cc.
void RegisterSweepCommands(CommandTable* table);
// engine/: cli/engine_commands.cc (alone in capplan_cli_engine, for the
// device project's capplan-engine).
void RegisterEngineCommands(CommandTable* table);
// calibrate/: cli/calibrate_commands.cc.
void RegisterCalibrateCommands(CommandTable* table);
// report/: cli/report_commands.cc.
void RegisterReportCommands(CommandTable* table);
// calibrate/runs/ (`import-run`): cli/import_run_command.cc.
void RegisterImportRunCommand(CommandTable* table);

}  // namespace capplan::cli

#endif  // CAPPLAN_CLI_COMMANDS_H_
