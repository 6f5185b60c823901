// Memory per GPU: weights by component (with scales), KV bytes per token, and
// the KV pool the serving engine would allocate, per the engine's own rules
// (models/engines/*.json, every value with its public source).
#ifndef CAPPLAN_MODELS_MEMORY_H_
#define CAPPLAN_MODELS_MEMORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "hw/profile.h"
#include "models/card.h"
#include "models/types.h"

namespace capplan::models {

// Resolves the card's checkpoint formats and the deployment's choice into the
// format of every component. Usage error for unknown names.
Result<std::map<Component, WeightFormat>> ResolveWeightFormats(const ModelCard& card,
                                                               const PrecisionChoice& choice);

struct ComponentWeights {
  Component component;
  WeightFormat format;
  int64_t params_total = 0;    // whole model
  int64_t params_per_gpu = 0;  // after TP/EP sharding or replication
  int64_t bytes_per_gpu = 0;   // values only
  int64_t scale_bytes_per_gpu = 0;
};

struct WeightBreakdown {
  std::vector<ComponentWeights> components;
  int64_t params_total = 0;
  int64_t params_per_gpu = 0;
  int64_t bytes_per_gpu = 0;  // values + scales, all components
};

// Invalid-config errors when TP does not divide heads, EP does not divide
// experts, etc.
Status ValidateLayout(const ModelCard& card, const ParallelLayout& layout);
Result<WeightBreakdown> ComputeWeights(const ModelCard& card, const ParallelLayout& layout,
                                       const PrecisionChoice& choice);

struct KvLayout {
  Dtype dtype = Dtype::kBf16;
  // Bytes per token on one attention rank, all layers, including the DSA
  // indexer keys and any FP8 scales.
  int64_t bytes_per_token = 0;
  int64_t main_bytes_per_token = 0;     // K/V or latent+rope
  int64_t indexer_bytes_per_token = 0;  // DSA index keys (+scales)
  int64_t scale_bytes_per_token = 0;    // FP8 scales included above
  int kv_heads_per_rank = 0;            // GQA: max(1, kv_heads / attn_tp)
};
Result<KvLayout> ComputeKvLayout(const ModelCard& card, const ParallelLayout& layout, Dtype kv);

// What the device offers. SGLang's default mem_fraction_static reads the
// reported total (nvidia-smi); vLLM's gpu_memory_utilization multiplies the
// total the CUDA runtime reports (cudaMemGetInfo), which can be smaller.
struct DeviceMemory {
  int64_t reported_bytes = 0;
  int64_t runtime_bytes = 0;  // 0: same as reported_bytes
  // The GPU's profile, when known: the plan then refuses weights whose
  // format its tensor cores cannot run (hw::CheckFormatRuns). Not owned.
  const hw::HardwareProfile* profile = nullptr;
  int64_t RuntimeBytes() const { return runtime_bytes > 0 ? runtime_bytes : reported_bytes; }
};

struct EngineProfile;  // models/engine_profile.h

// Engine knobs of a capacity question. Zero / unset means the engine
// profile's default (models/engines/<engine>.json), never a literal here.
struct EngineMemoryOptions {
  std::string engine = "sglang";  // a name from EngineNames()
  std::string version;            // "" = the engine's latest
  std::optional<double> mem_fraction;  // SGLang mem_fraction_static / vLLM gpu_memory_utilization
  int64_t chunked_prefill_tokens = 0;  // SGLang chunk / vLLM max_num_batched_tokens
  int64_t cuda_graph_max_bs = 0;
  int64_t page_size = 0;
  // Speculative decoding's draft model (DraftCard): its weights, its own KV
  // (cell_size x (1 + draft layers / L)) and the engine's extra reserve.
  DraftKind draft = DraftKind::kNone;
  int draft_layers = 0;  // 0: DraftCard's default for the kind
  bool speculative() const { return draft != DraftKind::kNone; }
  std::optional<bool> nvls;   // NCCL NVLS buffers; unset: the engine's default
  // A parsed profile (ParseEngineProfiles) to plan with instead of the
  // shipped models/engines/<engine>.json entry: for checking a profile file
  // before it ships. Not owned; `version` is then ignored.
  const EngineProfile* profile = nullptr;
};

// One slice of a GPU's memory. The terms of a plan add up to the reported
// device memory exactly.
struct MemoryTerm {
  std::string key;   // JSON key, e.g. "startup_bytes"
  std::string what;  // one line for people
  int64_t bytes = 0;
  std::string source;  // the rule and where it comes from
};

// A memory term that rests on one public log or on an assumption, at the
// ends of its range (models/engines/<engine>.json "range"), and the KV pool
// each end gives with every other term at its value.
struct KvRangeTerm {
  std::string key;                   // the profile's name under "memory", e.g. "startup_bytes"
  double lo = 0, value = 0, hi = 0;  // the term's unit (bytes, bytes per element, 0/1)
  int64_t kv_tokens_at_lo = 0, kv_tokens_at_hi = 0;  // whole instance
  std::string source;
};

// How the engine splits a hybrid model's memory (models/hybrid_pools.h);
// all zero for a model whose layers all keep per-token KV in one pool.
struct HybridPools {
  std::string local_rule, linear_rule;  // the rules applied, with their sources
  int global_layers = 0, local_layers = 0, linear_layers = 0;
  // Linear layers: one sequence's state on one rank, all linear layers.
  int64_t state_bytes_per_sequence = 0;
  // SGLang: the state pool's slots per rank and the slots a running
  // request holds; vLLM: the blocks a request holds for its states.
  int64_t state_slots_per_rank = 0;
  int64_t state_slots_per_request = 0;
  // SGLang: the window-limited layers' own pool, tokens per rank.
  int64_t local_tokens_per_rank = 0;
  // vLLM: one block pool shared by layer groups of layers_per_group layers.
  int64_t block_tokens = 0, blocks_per_rank = 0, layers_per_group = 0;
  int full_groups = 0, local_groups = 0, state_groups = 0;
  // Requests of the plan's context one rank holds, by the tightest pool.
  int64_t requests_per_rank = 0;
  bool active() const { return !local_rule.empty() || !linear_rule.empty(); }
};

// One component's weights as shipped and as the engine keeps them under the
// kernel implementation it runs for them (EngineProfile::resident_weights).
struct ResidentComponent {
  Component component;
  std::string implementation;  // "vllm_trtllm_gen_moe_mxfp4"
  std::string rule_key;        // "vllm_trtllm_gen_moe_mxfp4.mxfp4"
  std::string rule;            // the multiples applied, for people
  int64_t shipped_bytes = 0;   // values + scales as in the checkpoint shard
  int64_t resident_bytes = 0;  // padded to the kernel's multiples, biases as kept
  std::string source;
};

struct MemoryPlan {
  std::string engine, engine_version, rule_source;  // which rule was applied
  std::string engine_rule_version;  // the profile entry used ("0.4.6")
  std::string version_note;         // set when the version has no entry of its own
  std::string knob;                 // "mem_fraction_static" | "gpu_memory_utilization"
  double mem_fraction = 0;        // the effective knob value
  bool mem_fraction_defaulted = true;
  int64_t gpu_memory_bytes = 0;   // reported
  int64_t page_size = 0;          // resolved
  int64_t chunked_prefill_tokens = 0;
  int64_t cuda_graph_max_bs = 0;
  bool nvls = false;
  WeightBreakdown weights;        // checkpoint shards
  int64_t weights_resident_bytes = 0;  // shards + what the engine keeps beside them
  // Components whose kernel has a resident-weights rule (padding, repacked
  // scales, kept copies); the difference is the kernel_layout_bytes term.
  std::vector<ResidentComponent> resident_weights;
  int64_t draft_weights_bytes = 0;     // speculative draft layers (inside the above)
  int64_t reserve_bytes_per_gpu = 0;  // graphs, activations, workspace, unrequested
  int64_t kv_pool_bytes_per_gpu = 0;
  std::vector<MemoryTerm> terms;  // adds up to gpu_memory_bytes
  KvLayout kv;
  int64_t kv_tokens_per_rank = 0;   // one attention rank's pool (page-aligned)
  int attention_ranks = 1;
  int64_t kv_capacity_tokens = 0;   // whole instance (sum over attention ranks)
  // kv_capacity_tokens with every ranged term of this plan at the end that
  // gives less KV (lo) and more KV (hi); both equal it when no term in use
  // has a range. Only terms that change this plan's pool are listed.
  int64_t kv_tokens_lo = 0, kv_tokens_hi = 0;
  std::vector<KvRangeTerm> kv_range_terms;
  HybridPools hybrid;               // linear-state and window pools, when the engine splits them
  int64_t context_tokens = 0;       // the L asked about
  int64_t max_concurrent_requests = 0;  // requests of context L that fit
  // What the engine leaves for weights + KV on one GPU, and by how much the
  // weights exceed it (0 when they fit; only PlanMemoryAllowShortfall returns
  // a plan with a shortfall).
  int64_t weight_room_bytes_per_gpu = 0;
  int64_t weights_shortfall_bytes = 0;

  int64_t Term(const std::string& key) const;  // 0 when absent
};

// Invalid-config error "weights need X GiB per GPU but only Y GiB ..." when
// the weights do not fit.
Result<MemoryPlan> PlanMemory(const ModelCard& card, const ParallelLayout& layout,
                              const PrecisionChoice& choice, const EngineMemoryOptions& engine,
                              const DeviceMemory& device, int64_t context_tokens);
// As PlanMemory, but weights that do not fit give a plan with
// weights_shortfall_bytes > 0 and an empty KV pool instead of an error (for
// tables that show every configuration).
Result<MemoryPlan> PlanMemoryAllowShortfall(const ModelCard& card, const ParallelLayout& layout,
                                            const PrecisionChoice& choice,
                                            const EngineMemoryOptions& engine,
                                            const DeviceMemory& device, int64_t context_tokens);

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_MEMORY_H_
