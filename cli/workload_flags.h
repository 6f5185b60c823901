// Shorthand flags for the workload knobs a benchmark client names
// (`vllm bench serve --max-concurrency`, `--request-rate`,
// `--random-input-len`, `--random-output-len`, `--num-prompts`): each is the
// `--set` of one scenario field, applied after the command's own `--set`s;
// and --calibration, the scenario's calibration overlay.
#ifndef CAPPLAN_CLI_WORKLOAD_FLAGS_H_
#define CAPPLAN_CLI_WORKLOAD_FLAGS_H_

#include <boost/program_options.hpp>
#include <string>
#include <vector>

namespace capplan::cli {

// Adds --concurrency, --request-rate, --input-len, --output-len,
// --num-requests and --calibration to `desc`.
void AddWorkloadFlags(boost::program_options::options_description& desc);

// The --set overrides the given shorthand flags stand for ("workload.
// concurrency=64", "workload.input_tokens={...fixed...}"), in table order.
std::vector<std::string> WorkloadFlagSets(const boost::program_options::variables_map& vm);

}  // namespace capplan::cli

#endif  // CAPPLAN_CLI_WORKLOAD_FLAGS_H_
