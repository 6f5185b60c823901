#include "cli/workload_flags.h"

#include <filesystem>

namespace capplan::cli {

namespace po = boost::program_options;

namespace {

// One shorthand: its flag, the scenario field it sets, and how a value is
// written there ("%s" is the flag's value).
struct WorkloadFlag {
  const char* flag;
  const char* field;
  const char* value;
  const char* help;
  // The value is a file: made absolute, since the scenario key is read
  // relative to the scenario's folder.
  bool path = false;
};

constexpr WorkloadFlag kFlags[] = {
    {"concurrency", "workload.concurrency", "%s",
     "requests in flight: a closed loop's concurrency, an open loop's cap "
     "(--set workload.concurrency=N)"},
    {"request-rate", "workload.request_rate", "%s",
     "an open loop's arrival rate, requests per second (--set workload.request_rate=R)"},
    {"input-len", "workload.input_tokens", R"({"dist": "fixed", "value": %s})",
     "every prompt this many tokens (--set workload.input_tokens={\"dist\": \"fixed\", "
     "\"value\": N})"},
    {"output-len", "workload.output_tokens", R"({"dist": "fixed", "value": %s})",
     "every answer this many tokens (--set workload.output_tokens={...})"},
    {"num-requests", "workload.num_requests", "%s",
     "requests in the run, warm-up included (--set workload.num_requests=N; a closed loop "
     "without it runs until steady state)"},
    {"calibration", "calibration", "%s",
     "a calibration overlay fitted on your runs (capplan calibrate --runs --out): "
     "--set calibration=FILE",
     true},
};

std::string Fill(const char* pattern, const std::string& v) {
  std::string out = pattern;
  const size_t at = out.find("%s");
  return out.replace(at, 2, v);
}

}  // namespace

void AddWorkloadFlags(po::options_description& desc) {
  for (const WorkloadFlag& f : kFlags) {
    desc.add_options()(f.flag, po::value<std::string>(), f.help);
  }
}

std::vector<std::string> WorkloadFlagSets(const po::variables_map& vm) {
  std::vector<std::string> sets;
  for (const WorkloadFlag& f : kFlags) {
    if (!vm.count(f.flag)) continue;
    std::string v = vm[f.flag].as<std::string>();
    if (f.path) v = std::filesystem::absolute(v).string();
    sets.push_back(std::string(f.field) + "=" + Fill(f.value, v));
  }
  return sets;
}

}  // namespace capplan::cli
