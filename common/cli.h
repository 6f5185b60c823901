// The `capplan` command table. Each library registers its own subcommands
// (models: capacity; sim: simulate, sweep, search; engine: engine; calibrate:
// calibrate, validate; report: report) through a Register*Commands function
// called from cli/main.cc. Handlers return Status; only main() prints errors
// and chooses exit codes.
#ifndef CAPPLAN_COMMON_CLI_H_
#define CAPPLAN_COMMON_CLI_H_

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "common/status.h"

namespace capplan {

struct CommandContext {
  std::ostream* out;      // results (tables, --json objects)
  std::ostream* err;      // progress and warnings
  bool stderr_is_tty = false;  // progress bars only on a terminal
};

// args excludes the command name itself.
using CommandFn = std::function<Status(const std::vector<std::string>& args, CommandContext&)>;

struct Command {
  std::string name;
  std::string summary;  // one line for `capplan --help`
  CommandFn run;
};

class CommandTable {
 public:
  void Add(Command c);
  const Command* Find(const std::string& name) const;
  std::vector<std::string> Names() const;
  // Dispatches args[0]; unknown names are Usage errors with "did you mean".
  Status Dispatch(const std::vector<std::string>& args, CommandContext& ctx) const;
  std::string Help(const std::string& program) const;

 private:
  std::vector<Command> commands_;
};

// Parses `args` against `desc` (and optional positionals) with prefix
// guessing turned off, so --rate never silently matches --rate-limit.
// Unknown options are Usage errors with "did you mean"; when `help` is set and
// --help was given, *help_requested is set and the caller prints `desc`.
Status ParseCommandLine(const std::string& command, const std::vector<std::string>& args,
                        const boost::program_options::options_description& desc,
                        const boost::program_options::positional_options_description* pos,
                        boost::program_options::variables_map* vm);

}  // namespace capplan

#endif  // CAPPLAN_COMMON_CLI_H_
