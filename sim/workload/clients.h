// Benchmark clients a closed loop models (the closed_loop workload's
// `client`), registered by name. A client says how it turns a length given
// as `fixed` (its --random-input-len / --random-output-len) into request
// lengths with its --random-range-ratio. Every registered client sends its
// first `concurrency` requests at t = 0 and the next one when one finishes:
// `vllm bench serve`, SGLang's bench_serving and InferenceX's
// benchmark_serving.py create one asyncio task per request without waiting
// between them at --request-rate inf, each gated by a --max-concurrency
// semaphore, so no client staggers its start. Sources and the rule for the
// default: sim/workload/README.md.
#ifndef CAPPLAN_SIM_WORKLOAD_CLIENTS_H_
#define CAPPLAN_SIM_WORKLOAD_CLIENTS_H_

#include <nlohmann/json.hpp>
#include <string>

#include "common/registry.h"

namespace capplan::sim {

struct BenchmarkClient {
  // The bounds its random dataset samples a length L in, as length_dist's
  // uniform `convention` ("vllm": [floor(L(1-r)), ceil(L(1+r))]; "sglang":
  // [max(int(L r), 1), L]); empty: every length exactly as given.
  std::string convention;
  double default_range_ratio = 0;
  double max_range_ratio = 0;  // inclusive
};

const Registry<BenchmarkClient>& BenchmarkClients();

// The length object request lengths are drawn from under client `c` with
// range ratio `r`: a `fixed` length becomes the client's uniform, anything
// else is returned unchanged (an explicit distribution is what it says).
nlohmann::json ClientLengthSpec(const nlohmann::json& spec, const BenchmarkClient& c, double r);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_WORKLOAD_CLIENTS_H_
