// capplan: the one CLI. Each library registers its own subcommands; this file
// only wires them together and turns a Status into a message and exit code.
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "common/cli.h"
#include "common/memory_budget.h"
#include "common/temp_files.h"

int main(int argc, char** argv) {
  capplan::CommandTable table;
  capplan::cli::RegisterModelsCommands(&table);
  capplan::cli::RegisterSimCommands(&table);
  capplan::cli::RegisterEngineCommands(&table);
  capplan::cli::RegisterCalibrateCommands(&table);
  capplan::cli::RegisterReportCommands(&table);
  capplan::cli::RegisterImportRunCommand(&table);

  std::vector<std::string> args(argv + 1, argv + argc);
  // --yes, accepted by every command: run even when a run's estimated
  // memory exceeds what this machine has, or its estimated time the run-time
  // budget (common/memory_budget.h).
  const auto yes = std::remove(args.begin(), args.end(), std::string("--yes"));
  if (yes != args.end()) {
    args.erase(yes, args.end());
    capplan::SetMemoryCheckDisabled(true);
  }
  // Ctrl-C or SIGTERM during a write removes its temporary files.
  capplan::InstallInterruptCleanup();
  if (!args.empty() && args[0] == "--version") {
    std::cout << "capplan " << CAPPLAN_VERSION << " (commit " << CAPPLAN_GIT_COMMIT << ")\n";
    return 0;
  }
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << table.Help("capplan");
    return args.empty() ? 2 : 0;
  }
  capplan::CommandContext ctx{&std::cout, &std::cerr, ::isatty(STDERR_FILENO) != 0};
  capplan::Status st;
  // Library code returns errors as values; an exception reaching here is a
  // bug, but the user still gets one line and an exit code, not terminate().
  try {
    st = table.Dispatch(args, ctx);
  } catch (const std::bad_alloc&) {
    st = capplan::Status::Internal("out of memory (an input asks for more than this machine has)");
  } catch (const std::exception& e) {
    st = capplan::Status::Internal(std::string("internal error: ") + e.what());
  }
  std::cout.flush();
  if (!st.ok()) {
    std::cerr << "capplan: error: " << capplan::OneLine(st.message()) << "\n";
    return st.ExitCode();
  }
  return 0;
}
