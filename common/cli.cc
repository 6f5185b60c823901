#include "common/cli.h"

#include <algorithm>
#include <ostream>
#include <sstream>

#include "common/did_you_mean.h"

namespace po = boost::program_options;

namespace capplan {

void CommandTable::Add(Command c) { commands_.push_back(std::move(c)); }

const Command* CommandTable::Find(const std::string& name) const {
  for (const auto& c : commands_) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::vector<std::string> CommandTable::Names() const {
  std::vector<std::string> n;
  for (const auto& c : commands_) n.push_back(c.name);
  return n;
}

Status CommandTable::Dispatch(const std::vector<std::string>& args, CommandContext& ctx) const {
  if (args.empty()) return Status::Usage("missing command; see --help");
  const Command* c = Find(args[0]);
  if (c == nullptr) {
    return Status::Usage("unknown command '" + args[0] + "'" + DidYouMean(args[0], Names()));
  }
  return c->run(std::vector<std::string>(args.begin() + 1, args.end()), ctx);
}

std::string CommandTable::Help(const std::string& program) const {
  std::ostringstream os;
  os << "usage: " << program << " <command> [options]   (" << program
     << " <command> --help for its options; " << program
     << " --version for the version and commit)\n\ncommands:\n";
  size_t w = 0;
  for (const auto& c : commands_) w = std::max(w, c.name.size());
  for (const auto& c : commands_) {
    os << "  " << c.name << std::string(w - c.name.size() + 2, ' ') << c.summary << "\n";
  }
  os << "\nevery command also takes --yes: run even when the run's estimated memory is more "
        "than this machine has\n";
  return os.str();
}

Status ParseCommandLine(const std::string& command, const std::vector<std::string>& args,
                        const po::options_description& desc,
                        const po::positional_options_description* pos, po::variables_map* vm) {
  const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
  try {
    po::command_line_parser parser(args);
    parser.options(desc).style(style);
    if (pos != nullptr) parser.positional(*pos);
    po::store(parser.run(), *vm);
    po::notify(*vm);
  } catch (const po::unknown_option& e) {
    std::vector<std::string> names;
    for (const auto& o : desc.options()) names.push_back("--" + o->long_name());
    const std::string opt = e.get_option_name();
    return Status::Usage(command + ": unknown option '" + opt + "'" + DidYouMean(opt, names));
  } catch (const po::too_many_positional_options_error& e) {
    return Status::Usage(command + ": too many arguments; see '" + command + " --help'");
  } catch (const po::error& e) {
    return Status::Usage(command + ": " + e.what() + "; see '" + command + " --help'");
  }
  return Status::Ok();
}

}  // namespace capplan
