// `capplan-engine`: the engine's commands alone (engine serve-bench,
// integrity-selftest, numerics, microbench), for the device script. It is
// built by the kernels-only project (engine/device/kernels_only), which
// leaves out sim/, calibrate/ and report/ so that a folder mid-change there
// cannot stop a device run and the device build stays short. Same dispatch
// and exit codes as cli/main.cc.
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "common/cli.h"

int main(int argc, char** argv) {
  capplan::CommandTable table;
  capplan::cli::RegisterEngineCommands(&table);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << table.Help("capplan-engine");
    return args.empty() ? 2 : 0;
  }
  capplan::CommandContext ctx{&std::cout, &std::cerr, ::isatty(STDERR_FILENO) != 0};
  const capplan::Status st = table.Dispatch(args, ctx);
  std::cout.flush();
  if (!st.ok()) {
    std::cerr << "capplan-engine: error: " << st.message() << "\n";
    return st.ExitCode();
  }
  return 0;
}
