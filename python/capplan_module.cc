// capplan._capplan: runs a capplan command in-process and returns what it
// printed, or the error the CLI would print. The Python functions
// (capplan/__init__.py) build the arguments and parse the JSON, so every
// command keeps exactly one implementation: the one `capplan` runs.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <exception>
#include <new>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "cli/commands.h"
#include "common/cli.h"
#include "common/status.h"

namespace capplan {
namespace {

const CommandTable& Commands() {
  static const CommandTable* table = [] {
    auto* t = new CommandTable;
    cli::RegisterModelsCommands(t);
    cli::RegisterSimCommands(t);
    cli::RegisterCalibrateCommands(t);
    cli::RegisterReportCommands(t);
    cli::RegisterImportRunCommand(t);
    return t;
  }();
  return *table;
}

// (exit code, stdout, stderr, one-line error or ""), as cli/main.cc would
// produce them for `capplan ARGS...`.
std::tuple<int, std::string, std::string, std::string> Run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CommandContext ctx{&out, &err, false};
  Status st;
  {
    pybind11::gil_scoped_release release;
    try {
      st = Commands().Dispatch(args, ctx);
    } catch (const std::bad_alloc&) {
      st = Status::Internal("out of memory (an input asks for more than this machine has)");
    } catch (const std::exception& e) {
      st = Status::Internal(std::string("internal error: ") + e.what());
    }
  }
  if (st.ok()) return {0, out.str(), err.str(), ""};
  return {st.ExitCode(), out.str(), err.str(), OneLine(st.message())};
}

}  // namespace
}  // namespace capplan

PYBIND11_MODULE(_capplan, m) {
  m.doc() = "capplan commands run in-process (use the capplan package, not this module)";
  m.def("run", &capplan::Run, pybind11::arg("args"),
        "Runs `capplan ARGS...`; returns (exit_code, stdout, stderr, error_line).");
}
