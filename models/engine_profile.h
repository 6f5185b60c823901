// Engine profiles: every default and memory rule of a serving engine
// (SGLang, vLLM), per version, loaded once from models/engines/<engine>.json.
// models/, the simulator and the CLI read defaults from here and nowhere
// else. Each value carries its public source for `capplan capacity --explain`.
//
// A profile file lists the versions where a rule changed, oldest first; each
// entry is merged over the one before it (JSON merge patch), so adding an
// engine version is a data change only. A version between two entries uses
// the earlier entry's rules, and the resolution says so.
#ifndef CAPPLAN_MODELS_ENGINE_PROFILE_H_
#define CAPPLAN_MODELS_ENGINE_PROFILE_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/kernel_choice.h"

namespace capplan::models {

// "0.5.4" -> {0, 5, 4} (a leading 'v' and a ".postN" suffix are accepted);
// Usage error naming `flag` otherwise.
Result<std::array<int, 3>> ParseEngineVersion(const std::string& v, const std::string& flag);

// Scheduler and batching defaults.
struct EngineDefaults {
  int64_t chunked_prefill_tokens = 0;  // SGLang chunk size / vLLM max_num_batched_tokens
  int64_t page_size = 0;
  int64_t page_size_sparse_attention = 0;  // DSA models
  int64_t cuda_graph_max_bs_small_tp = 0, cuda_graph_max_bs_large_tp = 0;
  int64_t cuda_graph_large_tp_from = 0;
  // max_running_requests = min(max(kv_tokens / context_len x per_context,
  // min), max); vLLM's fixed max_num_seqs has per_context 0 and min == max.
  int64_t max_running_per_context = 0, max_running_min = 0, max_running_max = 0;
  bool overlap_schedule = false;
  bool prefix_cache = false;  // SGLang's radix cache / vLLM's automatic prefix caching
  // With attention data parallelism, the running-request cap is the whole
  // instance's, split over the DP ranks (SGLang); else each rank's (vLLM:
  // one engine core, with its own max_num_seqs, per DP rank).
  bool max_running_split_over_dp = true;
  // vLLM only (optional key): a waiting request is admitted only when the
  // pages of its whole prompt are free, not only those of its first chunk
  // (sim::SchedulerConfig::admit_whole_prompt).
  bool admit_whole_prompt = false;
  // With speculative decoding (EAGLE / MTP): the most draft tokens a step
  // may propose, the max_running_requests default the engine switches to
  // (0: the rule above still applies), and whether its overlap scheduler
  // still runs.
  int64_t speculative_max_draft_tokens = 0;
  int64_t speculative_max_running_requests = 0;
  bool speculative_overlap_schedule = false;
  // SGLang's admission estimate and decode retraction (engines without them
  // leave these 0 / empty): new_token_ratio starts at init (x
  // schedule_conservativeness 1.0), decays to init x min_factor over
  // decay_steps decode iterations; admission clips a request's remaining
  // output at clip_max_new_tokens. A retraction frees requests until
  // `retract_until` holds ("decode_steps_headroom": retract_decode_steps
  // tokens free per remaining request; "next_decode_fits": the next decode
  // step fits) and resets the ratio to the remaining requests' estimate.
  double new_token_ratio_init = 0, new_token_ratio_min_factor = 0;
  int64_t new_token_ratio_decay_steps = 0, clip_max_new_tokens = 0, retract_decode_steps = 0;
  std::string retract_until;
  // Optional keys mla_absorbed_prefix_from / _below.
  MlaAbsorbedPrefix mla_absorbed_prefix;

  int64_t CudaGraphMaxBs(int tp) const;
  int64_t PageSize(bool sparse_attention) const;
  int64_t MaxRunningRequests(int64_t kv_tokens, int64_t context_len) const;
};

// One SGLang mem_fraction_static bucket (by reported GPU memory). Kinds:
//   fixed:    reserve = base
//   per_tp:   reserve = base + tp*pp x per_tp_pp (+ speculative, + DP attention)
//   itemized: base + max(chunked, chunked_min) x per_token + cgbs x per_bs
//             + tp*pp x per_tp_pp [+ DP terms], floored; + speculative
// All in MiB.
struct SglangFractionBucket {
  double min_gpu_gib = 0, max_gpu_gib = 0;
  std::string kind, source;
  double base_mib = 0, per_tp_pp_mib = 0, speculative_mib = 0, dp_attention_mib = 0;
  double chunked_prefill_min = 0, chunked_prefill_mib_per_token = 0, cuda_graph_mib_per_bs = 0;
  double dp_mib_per_bs_rank = 0, dp_extra_threshold_bs = 0, dp_extra_mib_per_bs_rank = 0;
  double floor_mib = 0, floor_above_gpu_mib = 0;
  // The chunked-prefill size and CUDA-graph batch this memory class runs
  // with when the user sets none (SGLang sizes both by GPU memory); 0: the
  // engine's defaults.
  double chunked_prefill_tokens = 0, cuda_graph_max_bs = 0;
};

enum class MemoryRuleKind { kSglangStaticFraction, kVllmProfileRun };

// How many copies of the shared expert every rank holds.
enum class SharedExpertCopies { kOne, kPerTpRank };

// How an engine sizes the pools of a model whose layers are not all alike
// ("memory.hybrid_pools", optional; models/hybrid_pools.h applies it).
//  local: window-limited layers (sliding window, chunked local attention)
//    kPerToken: sized per token like full layers (no hybrid pool)
//    kSwaRatio: SGLang's SWA pool, swa_full_tokens_ratio x the full pool's
//      tokens, both out of one budget; with local_holds_whole_request a
//      running request keeps all its tokens there (no eviction in decode)
//    kWindowBlocks: vLLM's hybrid KV cache manager, one block pool shared by
//      layer groups; a local group holds only the window's blocks
//  linear: per-sequence recurrent state of linear-attention layers
//    kNone: the engine version serves no such model
//    kRatioOfRest: SGLang, state = rest x r / (1 + r) in slots of one
//      sequence's state; state_slots_per_request slots per running request
//    kStateBlock: vLLM, the state is one block of each linear group, the
//      attention block grown (block_alignment_tokens steps) until a block's
//      KV holds a state
struct HybridPoolRule {
  enum class Local { kPerToken, kSwaRatio, kWindowBlocks };
  enum class Linear { kNone, kRatioOfRest, kStateBlock };
  Local local = Local::kPerToken;
  double swa_full_tokens_ratio = 0;
  bool local_holds_whole_request = false;
  Linear linear = Linear::kNone;
  double mamba_full_memory_ratio = 0;
  int state_slots_per_request = 0;
  std::string ssm_state_dtype = "model";  // "fp32" | "bf16" | "model" (the checkpoint's dtype)
  std::string conv_state_dtype = "model";
  int block_alignment_tokens = 0;
};

// The memory terms of one engine version (per GPU, bytes).
struct EngineMemoryRule {
  HybridPoolRule hybrid;
  MemoryRuleKind kind = MemoryRuleKind::kSglangStaticFraction;
  bool page_align = true;
  // SGLang: mem_fraction_static defaults.
  std::vector<SglangFractionBucket> buckets;
  int round_decimals = -1;  // -1: not rounded
  // vLLM: gpu_memory_utilization default and the profile run.
  double utilization_default = 0;
  int null_block_pages = 0;
  bool cudagraph_counted = false;
  int64_t activation_base_bytes = 0;
  double sampler_bytes_per_element = 0;
  bool moe_workspace = false;
  int64_t non_torch_tp1_bytes = 0, non_torch_bytes = 0;
  // Before the weights (SGLang counts them; vLLM's non-torch term does).
  int64_t startup_bytes = 0;
  int64_t dist_init_tp1_bytes = 0, dist_init_bytes = 0;
  bool nvls_default = false;
  int nvls_min_tp = 0;
  int64_t nvls_bytes = 0;
  // Weights as resident.
  SharedExpertCopies shared_expert_copies = SharedExpertCopies::kOne;
  bool mla_absorbed_copies = false;
  int rotary_cache_bytes_per_element = 0;
  int vocab_pad_multiple = 1;
};

// Weights as resident under one kernel implementation and weight format
// ("resident_weights" in the profile, keyed "<implementation>.<format
// selector>", e.g. "vllm_marlin_moe.nvfp4"): how the engine's weight loading
// lays a checkpoint's tensors out for that kernel, read from the engine's
// code at the entry's version. Each dimension per rank is rounded up to its
// multiple (1: kept as shipped); scales follow the padded shape in the
// weight's own scale layout. MoE experts: gate_up is intermediate x hidden,
// down is hidden x intermediate.
struct ResidentWeightRule {
  int intermediate_multiple = 1;    // experts' intermediate size per rank
  int gate_up_hidden_multiple = 1;  // gate_up's input (hidden) features
  int down_hidden_multiple = 1;     // down's output (hidden) features
  int dense_n_multiple = 1;         // dense linear layers' output features per rank
  int bias_bytes = 0;               // bytes per expert-bias element as kept (0: as shipped)
  std::string source;
};

// A host-memory KV tier as the engine version runs it ("host_kv_tier" in
// the profile; absent: the version has none capplan describes): how blocks
// get their host copy (write policies, the default first), whether the
// forward overlaps a load layer by layer, and the shortest host hit it
// loads rather than recomputes.
struct HostKvTierRule {
  std::vector<std::string> write_policies;  // "write_through", "write_through_selective", "write_back"
  bool layerwise_load = false;
  int64_t load_back_min_tokens = 0;
  std::string source;
  bool present() const { return !write_policies.empty(); }
};

// Two micro-batches overlapped ("micro_batch_overlap" in the profile; absent:
// the version has none capplan describes): SGLang's two-batch overlap, vLLM's
// dual-batch overlap. A step splits in two when its tokens reach the
// threshold for its kind (decode only, or holding a prefill chunk), and the
// MoE all-to-all of one micro-batch runs under the other's compute.
struct MicroBatchOverlapRule {
  std::string flag;               // the launch flag that turns it on
  bool requires_deepep = false;   // needs the DeepEP all-to-all
  int64_t decode_token_threshold = 0;
  int64_t prefill_token_threshold = 0;
  std::string source;
  bool present() const { return !flag.empty(); }
};

// A memory term that rests on one public log or on an assumption carries
// its plausible span ("range": [lo, hi] beside "value", same unit); terms
// from an engine rule or from two or more logs carry none. Booleans are 0/1.
struct TermRange {
  double lo = 0, value = 0, hi = 0;
};

// The memory terms that may carry a range ("startup_bytes", ...), as named
// under "memory" in the profile file.
const std::vector<std::string>& RangeableMemoryTerms();
// `rule` with the memory term `key` (one of RangeableMemoryTerms()) set to
// `v`; integer terms are rounded, booleans are v >= 0.5.
EngineMemoryRule WithMemoryTerm(const EngineMemoryRule& rule, const std::string& key, double v);

// One value of a launch flag that chooses kernels ("launch_backends" in the
// engine profile): SGLang's --attention-backend flashinfer, vLLM's
// --attention-backend FLASHMLA. Its kernels go over the version's own
// choices (and its architecture's) when a deployment names it.
struct LaunchBackend {
  std::string source;
  // The GPU architectures ("sm90") it runs on; empty: every one.
  std::vector<std::string> architectures;
  // Selector -> implementation. An mla_prefill_absorbed.* choice applies only
  // where the version itself runs an absorbed prefill (names that selector).
  std::map<std::string, std::string> kernel_names;
};

// A launch flag that chooses kernels, as one engine version offers it.
struct LaunchBackendFlag {
  std::string default_name;    // what the version runs when the flag is absent
  std::string default_source;
  std::string source;          // where the choices were read
  std::map<std::string, LaunchBackend> choices;
  std::vector<std::string> Names() const;
};

// The deployment fields that name a launch backend, in a fixed order:
// "attention_backend", "moe_runner_backend".
const std::vector<std::string>& LaunchBackendFields();
// "attention_backend" -> "attention backend" (for messages).
std::string LaunchBackendNoun(const std::string& field);

// `names` with each chosen backend's kernels over them (`chosen`: field ->
// the backend's choice), keeping the absorbed-prefill rule above.
std::map<std::string, std::string> WithLaunchBackendKernels(
    std::map<std::string, std::string> names,
    const std::vector<const LaunchBackend*>& chosen);

// How an engine version places routed experts over EP ranks ("expert_parallel"
// in the profile, sources under "expert_parallel.<key>").
struct ExpertSplitRule {
  // Without redundant experts the routed experts may split unevenly (the
  // first E % ep ranks take one more); otherwise (E + R) % ep must be 0.
  bool uneven_without_redundant = false;
  // The version runs EPLB redundant experts at all.
  bool redundant_experts = true;
  // With attention DP, the dense FFN layers stay on each DP rank, sharded
  // over its TP group (ParallelLayout::dense_ffn_per_dp_rank).
  bool dense_ffn_per_dp_rank = false;
  // The launch flag that keeps them there where the default does not
  // (SGLang's --moe-dense-tp-size 1: unsharded, so attention TP must be 1);
  // "" when the version has none.
  std::string dense_ffn_per_dp_rank_flag;
  // The same for the LM head (ParallelLayout::lm_head_per_dp_rank): the
  // version's default, and the flag that sets it (SGLang's
  // --enable-dp-lm-head), "" when none.
  bool lm_head_per_dp_rank = false;
  std::string lm_head_per_dp_rank_flag;
};

struct EngineProfile {
  std::string engine;   // "sglang"
  std::string knob;     // "mem_fraction_static"
  std::string version;  // the entry's version, "0.4.6"
  std::array<int, 3> version_triple{};
  std::string source;  // the entry's source
  std::string rule_source;
  EngineDefaults defaults;
  EngineMemoryRule memory;
  ExpertSplitRule expert_split;
  // The kernel implementation per op selector ("kernels", optional):
  // "moe.int4" -> "sglang_marlin_moe", with each choice's source under
  // "kernels.<selector>" in `sources`.
  std::map<std::string, std::string> kernel_names;
  KernelChoices kernels;
  // Per GPU architecture ("sm100"), the selectors whose kernel differs
  // there ("kernels_by_architecture", optional; sources under
  // "kernels_by_architecture.<arch>.<selector>"): FA3 and FlashMLA are SM90
  // code, so the same engine version runs TRT-LLM-gen kernels on Blackwell.
  std::map<std::string, std::map<std::string, std::string>> kernel_names_by_architecture;
  // kernel_names with the architecture's choices over them.
  std::map<std::string, std::string> KernelNamesFor(const std::string& architecture) const;
  // The launch flags that choose kernels, by deployment field
  // ("attention_backend"); a field the version lacks is absent.
  std::map<std::string, LaunchBackendFlag> launch_backends;
  // "<implementation>.<format selector>" -> how its weights are resident.
  std::map<std::string, ResidentWeightRule> resident_weights;
  HostKvTierRule host_kv_tier;
  MicroBatchOverlapRule micro_batch_overlap;
  // "defaults.page_size" -> source, "memory.startup_bytes" -> source, ...
  std::map<std::string, std::string> sources;
  // Memory term ("startup_bytes") -> its range, for the terms that have one.
  std::map<std::string, TermRange> memory_ranges;
  const std::string& SourceOf(const std::string& key) const;
};

// Which profile a requested version resolved to.
struct EngineResolution {
  const EngineProfile* profile = nullptr;
  std::string version;  // what the user asked, or the latest when "" was asked
  std::array<int, 3> version_triple{};  // `version` parsed
  std::string note;     // non-empty when the version is not an entry of its own
};

// Shipped engine names (the files in models/engines/), sorted.
std::vector<std::string> EngineNames();

// `version` "" means the engine's latest. Usage errors: unknown engine (did
// you mean), a malformed or too-old version (listing the known versions).
Result<EngineResolution> ResolveEngine(const std::string& engine, const std::string& version);

// Parses one engine profile document (for tests and bad-file errors).
Result<std::vector<EngineProfile>> ParseEngineProfiles(const std::string& json_text,
                                                       const std::string& origin,
                                                       std::string* latest);

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_ENGINE_PROFILE_H_
