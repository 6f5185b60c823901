// A parsed scenario (scenarios/README.md documents every field). Immutable
// once parsed; RunScenario reads it from many threads.
#ifndef CAPPLAN_SIM_SCENARIO_H_
#define CAPPLAN_SIM_SCENARIO_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/workload/workload.h"

namespace capplan {

struct DeploymentSpec {
  std::string engine = "sglang";  // sglang | vllm
  std::string engine_version;     // "" = latest rules models/ knows
  int gpus = 8;
  int tp = 8;
  int ep = 1;
  bool dp_attention = false;
  int dp = 0;  // DP-attention ranks; 0 = tp
  int replicas = 1;
  std::string weights = "default";
  std::map<std::string, std::string> weights_per_component;  // "experts" -> "int4"
  std::string kv_cache = "bf16";  // bf16 | fp8
  std::optional<double> mem_fraction_static;  // null: the engine's default
  int64_t chunked_prefill_tokens = 0;  // 0: the engine profile's default
  std::optional<int64_t> max_running_requests;  // null: the engine's default
  int64_t page_size = 0;  // 0: the engine profile's default (per model kind)
  bool cuda_graphs = true;
  std::optional<int64_t> cuda_graph_max_bs;  // null: the engine's default
  std::string kv_integrity = "none";  // none | verify
  std::string phase = "both";         // both | decode_only | prefill_only
  std::string scheduler;              // "" = the engine's own (sglang | vllm)
  std::string router = "round_robin";  // round_robin | least_kv
  std::optional<bool> overlap_schedule;  // null: the engine's default
  std::string cost_model = "roofline";
};

struct SloSpec {
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
  bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};

struct Scenario {
  std::string origin;  // file name (or "<scenario>") errors and summaries name
  std::string name;
  std::string description;
  std::string model;
  std::string hardware = "h200-sxm";
  DeploymentSpec deployment;
  Workload workload;
  double usd_per_gpu_hour = 2.30;
  SloSpec slo;
  nlohmann::json doc;  // the document as parsed (after --set overrides)
};

}  // namespace capplan

#endif  // CAPPLAN_SIM_SCENARIO_H_
