// A command's flags parsed, and --help answered, in one call: what every
// `capplan` command that prints its options as its help starts with.
#ifndef CAPPLAN_CLI_PARSE_FLAGS_H_
#define CAPPLAN_CLI_PARSE_FLAGS_H_

#include <boost/program_options.hpp>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/status.h"

namespace capplan::cli {

// ParseCommandLine (common/cli.h) with `positional` taking up to
// `max_count` bare arguments (-1: any number). With --help, prints `desc`
// and a newline to ctx.out and returns false (the command has nothing
// more to do); otherwise true.
Result<bool> ParseFlags(const std::string& command, const std::vector<std::string>& args,
                        const boost::program_options::options_description& desc,
                        const char* positional, int max_count,
                        boost::program_options::variables_map* vm, CommandContext& ctx);

}  // namespace capplan::cli

#endif  // CAPPLAN_CLI_PARSE_FLAGS_H_
