#include "sim/workload/clients.h"

namespace capplan::sim {

const Registry<BenchmarkClient>& BenchmarkClients() {
  static const Registry<BenchmarkClient>* registry = [] {
    auto* r = new Registry<BenchmarkClient>("closed-loop client");
    // vllm/benchmarks/datasets.py RandomDataset.get_sampling_params:
    // floor/ceil bounds, range_ratio in [0, 1), default 0.
    r->Add("vllm_bench_serve", {"vllm", 0.0, 0.999999},
           "vllm bench serve --dataset-name random: lengths uniform in "
           "[floor(L(1-r)), ceil(L(1+r))], r default 0");
    // python/sglang/bench_serving.py sample_random_requests, default 0.
    r->Add("sglang_bench_serving", {"sglang", 0.0, 1.0},
           "SGLang bench_serving --dataset-name random: lengths uniform in [max(int(L r), 1), L], "
           "r default 0");
    // InferenceX utils/bench_serving/benchmark_serving.py sample_uniform
    // ([int(L r), L]) with the --random-range-ratio 0.8 of its runs.
    r->Add("inferencex", {"sglang", 0.8, 1.0},
           "InferenceX benchmark_serving.py: lengths uniform in [int(L r), L], r default 0.8");
    r->Add("lock_step", {"", 0.0, 0.0}, "every request exactly the given lengths, all sent at t=0");
    return r;
  }();
  return *registry;
}

nlohmann::json ClientLengthSpec(const nlohmann::json& spec, const BenchmarkClient& c, double r) {
  if (c.convention.empty() || !spec.is_object() || spec.value("dist", "") != "fixed" ||
      !spec.contains("value")) {
    return spec;
  }
  nlohmann::json out = spec;
  out["dist"] = "uniform";
  out["range_ratio"] = r;
  out["convention"] = c.convention;
  return out;
}

}  // namespace capplan::sim
