// A parsed scenario (scenarios/README.md documents every field). Immutable
// once parsed; RunScenario reads it from many threads.
#ifndef CAPPLAN_SIM_SCENARIO_H_
#define CAPPLAN_SIM_SCENARIO_H_

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/engine_profile.h"
#include "models/engine_step_costs.h"
#include "models/types.h"
#include "schema/run_summary.h"
#include "sim/calibration_overlay.h"
#include "sim/cost_model.h"
#include "sim/energy.h"
#include "sim/kv_tiers.h"
#include "sim/pd/kv_transfer.h"
#include "sim/sim_state.h"
#include "sim/speculative/acceptance.h"
#include "sim/workload/workload.h"

namespace capplan::sim {

enum class KvIntegrity { kNone, kVerify };
inline constexpr KvIntegrity kKvIntegrities[] = {KvIntegrity::kNone, KvIntegrity::kVerify};
inline const char* KvIntegrityName(KvIntegrity k) {
  return k == KvIntegrity::kVerify ? "verify" : "none";
}

// Every name is resolved when the scenario is parsed: enums for the closed
// sets, registered names (checked against their registry's Names()) for the
// plug-ins, so nothing downstream compares or re-checks strings.
struct DeploymentSpec {
  std::string engine = "sglang";  // an engine profile (models/engines/*.json)
  std::string engine_version;     // as written; "" = latest rules models/ knows
  // Resolved at parse: the profile entry the version uses and the version
  // it stands for (the engine's latest for "").
  models::EngineResolution engine_resolution;
  int gpus = 8;
  int tp = 8;
  int ep = 1;
  bool dp_attention = false;
  int dp = 0;  // DP-attention ranks; 0 = tp
  int replicas = 1;
  // The machines of one instance (models::ParallelLayout): `nodes` of
  // `gpus_per_node` (0: gpus / nodes) GPUs, joined by RDMA or one NVLink
  // domain; and how experts are placed and exchanged (`expert_parallel`).
  int nodes = 1;
  int gpus_per_node = 0;
  models::NodeLink node_link = models::NodeLink::kRdma;
  models::ExpertPlacement expert;
  std::string weights = "default";
  std::map<models::Component, std::string> weights_per_component;  // experts -> "int4"
  models::Dtype kv_cache = models::Dtype::kBf16;                   // bf16 | fp8
  std::optional<double> mem_fraction_static;  // null: the engine's default
  int64_t chunked_prefill_tokens = 0;  // 0: the engine profile's default
  std::optional<int64_t> max_running_requests;  // null: the engine's default
  int64_t page_size = 0;  // 0: the engine profile's default (per model kind)
  bool cuda_graphs = true;
  std::optional<int64_t> cuda_graph_max_bs;  // null: the engine's default
  // Board power limit per GPU (nvidia-smi -pl); null: the profile's TDP.
  // Slows each bound state that draws more (sim/energy.h).
  std::optional<double> power_limit_w;
  KvIntegrity kv_integrity = KvIntegrity::kNone;
  Phase phase = Phase::kBoth;
  std::string scheduler;               // a Schedulers() name; absent in the file: the engine's own
  std::string router = "round_robin";  // a Routers() name
  std::optional<bool> overlap_schedule;  // null: the engine's default
  // NCCL NVLS: its buffers in memory, its bandwidth for all-reduces; null:
  // the engine's default (on from the engine's minimum TP).
  std::optional<bool> nccl_nvls;
  // Prompt-prefix caching (SGLang's radix cache, vLLM's automatic prefix
  // caching); null: the engine's default. Needs a workload with content
  // identity (sessions, Mooncake hash_ids); others have nothing to match.
  std::optional<bool> prefix_cache;
  // KV tiers below the GPU (sim/kv_tiers.h): a host-memory tier under the
  // prefix cache.
  KvTiersSpec kv_tiers;
  // Two micro-batches, one's MoE all-to-all under the other's compute
  // (sim/micro_batch_overlap.h; the engine profile's micro_batch_overlap).
  bool two_batch_overlap = false;
  // With attention DP, the dense FFN layers on each DP rank's own tokens
  // (models::ParallelLayout::dense_ffn_per_dp_rank); null: the engine
  // version's default (expert_parallel.dense_ffn_per_dp_rank), true where
  // it is not: its launch flag (dense_ffn_per_dp_rank_flag).
  std::optional<bool> dense_ffn_per_dp_rank;
  // The same for the LM head (ParallelLayout::lm_head_per_dp_rank;
  // expert_parallel.lm_head_per_dp_rank and its _flag).
  std::optional<bool> lm_head_per_dp_rank;
  // The kernel implementation per op selector (models/kernel_choice.h): the
  // engine version's choices with the deployment's `kernels` over them
  // (`kernel_overrides`, checked against the hardware profile's tables when
  // the run is prepared).
  models::KernelChoices kernels;
  std::map<std::string, std::string> kernel_overrides;
  // The launch flags that choose kernels (deployment.attention_backend,
  // moe_runner_backend; models::LaunchBackendFields()): field -> one of the
  // engine version's backends (models/engines/<engine>.json
  // launch_backends), whose kernels go over the version's own and under
  // `kernels`. Absent: the version's own kernels (its default backend).
  std::map<std::string, std::string> launch_backends;
  // The chosen backends' entries in the engine profile, in field order.
  std::vector<const models::LaunchBackend*> LaunchBackendChoices() const;
  std::string cost_model = "roofline";   // a CostModels() name
  CostModelFactory cost_model_factory;   // its registry entry, resolved at parse
  // EAGLE / MTP speculative decoding; off by default.
  speculative::Spec speculative;
  // The engine's per-step host costs (models/engine_step_costs.h), resolved
  // at parse: its version's entry, with the keys the deployment's
  // `step_costs` sets (a user who has measured their server) in their place.
  models::EngineStepCosts step_costs;
  // From a calibration overlay (sim/calibration_overlay.h): a multiplier on
  // the priced time of every op that runs the implementation, and on the
  // memory plan's KV pool.
  std::map<std::string, double, std::less<>> kernel_scales;
  std::optional<double> kv_capacity_scale;
};

// The deployment's parallel layout as the memory planner and the cost model
// read it (DP-attention ranks default to tp).
models::ParallelLayout ParallelLayoutOf(const DeploymentSpec& d);

// One serving pool: a deployment with a role. A co-located scenario has one
// pool doing both phases (its `deployment`); a disaggregated one (`pd`) has a
// prefill and a decode pool, each a full deployment object, linked by a KV
// transfer.
struct PoolSpec {
  std::string name;  // key under `pools` in the summary; "" for the one co-located pool
  schema::PoolRole role = schema::PoolRole::kBoth;
  std::string pointer;  // where the deployment is in the document ("/pd/prefill")
  DeploymentSpec deployment;
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
  std::string hardware = hw::kDefaultProfileName;
  // Requests enter the first pool and leave from the last; with several
  // pools, `transfer` is the link between them (sim/pd/README.md).
  std::vector<PoolSpec> pools;
  std::optional<pd::KvTransferSpec> transfer;
  // The protocol that runs the pools together: a PoolLinks() name
  // (sim/pool_link.h), "pd" where `transfer` is set; empty: one pool.
  std::string pool_link;
  Workload workload;
  // cost.usd_per_gpu_hour; unset: the hardware profile's price block.
  // With cost.capex_usd_per_gpu and cost.amortization_years: the capex per
  // GPU-hour over that life.
  std::optional<double> usd_per_gpu_hour;
  // cost.host_memory_usd_per_gib_hour: what a GiB of a host KV tier
  // (deployment.kv_tiers) costs an hour; each GPU's tier adds its GiB at
  // this price to the GPU-hour. Unset: the tier's memory is not priced.
  std::optional<double> host_memory_usd_per_gib_hour;
  // cost.usd_per_kwh, cost.pue and the capex basis (sim/energy.h).
  EnergySettings energy;
  SloSpec slo;
  std::optional<AppliedCalibration> calibration;  // `calibration`, applied to the pools
  nlohmann::json doc;  // the document as parsed (after --set overrides)
};

// Parses a scenario document; `origin` (a file name) prefixes every error,
// with the JSON path of the offending field.
Result<std::shared_ptr<const Scenario>> ParseScenario(const nlohmann::json& doc,
                                                      const std::string& origin);
// Reads `path`, applies "dotted.path=value" overrides, parses.
Result<std::shared_ptr<const Scenario>> LoadScenarioFile(const std::string& path,
                                                         const std::vector<std::string>& sets);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_SCENARIO_H_
