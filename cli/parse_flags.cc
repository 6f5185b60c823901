#include "cli/parse_flags.h"

#include <ostream>

namespace capplan::cli {

Result<bool> ParseFlags(const std::string& command, const std::vector<std::string>& args,
                        const boost::program_options::options_description& desc,
                        const char* positional, int max_count,
                        boost::program_options::variables_map* vm, CommandContext& ctx) {
  boost::program_options::positional_options_description pos;
  pos.add(positional, max_count);
  CAPPLAN_RETURN_IF_ERROR(ParseCommandLine(command, args, desc, &pos, vm));
  if (vm->count("help")) {
    *ctx.out << desc << "\n";
    return false;
  }
  return true;
}

}  // namespace capplan::cli
