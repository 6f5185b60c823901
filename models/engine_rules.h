// Serving-engine memory rules (SGLang mem_fraction_static defaults, vLLM
// gpu_memory_utilization), per engine version, loaded once from
// models/engine_rules.json. Every constant there names its source.
#ifndef CAPPLAN_MODELS_ENGINE_RULES_H_
#define CAPPLAN_MODELS_ENGINE_RULES_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace capplan {

// "0.5.4" -> {0, 5, 4}; Usage error naming `flag` otherwise.
Result<std::array<int, 3>> ParseEngineVersion(const std::string& v, const std::string& flag);

struct SglangBucket {
  double min_gpu_gib = 0, max_gpu_gib = 0;
  // Older rule: base + tp*pp*per_tp_pp (+ speculative, + DP attention), MiB.
  // Newer rule: base + max(chunked, chunked_min)*chunked_mib_per_token +
  //   cgbs*cuda_graph_mib_per_bs + tp*pp*per_tp_pp + DP terms, floored.
  double base_mib = 0, per_tp_pp_mib = 0, speculative_mib = 0, dp_attention_mib = 0;
  double chunked_prefill_min = 0, chunked_prefill_mib_per_token = 0, cuda_graph_mib_per_bs = 0;
  double dp_mib_per_bs_rank = 0, dp_extra_threshold_bs = 0, dp_extra_mib_per_bs_rank = 0;
  double floor_mib = 0, floor_above_gpu_mib = 0;
  int chunked_prefill_default = 0;
  int cuda_graph_max_bs_small_tp = 0, cuda_graph_max_bs_large_tp = 0, large_tp_from = 0;
  std::string source;
};

struct EngineRule {
  std::string engine, name, kind, source;
  std::array<int, 3> min_version{}, max_version{};
  bool open_ended = false;
  // SGLang
  std::vector<SglangBucket> buckets;
  // vLLM
  double utilization_default = 0;
  int null_block_pages = 0;
  int max_num_seqs = 0;
  int activation_bytes_per_element = 0;
  int logits_bytes_per_element = 0;
  int64_t non_torch_bytes = 0;
  int64_t cudagraph_bytes = 0;
};

struct EngineRules {
  std::map<std::string, std::string> latest;  // engine -> latest known version
  std::vector<EngineRule> rules;
  bool sglang_page_align = true;
  int sglang_round_decimals = 3;
  int64_t sglang_pre_kv_other_bytes = 0;
};

Result<EngineRules> ParseEngineRules(const std::string& json_text, const std::string& origin);
// DataPath("models/engine_rules.json"), loaded once (thread-safe static).
Result<const EngineRules*> GetEngineRules();
// The rule for `engine` at `version` ("" = latest). Usage errors for unknown
// engines (did you mean) and versions no rule covers.
Result<const EngineRule*> FindEngineRule(const EngineRules& rules, const std::string& engine,
                                         const std::string& version, std::string* resolved);

}  // namespace capplan

#endif  // CAPPLAN_MODELS_ENGINE_RULES_H_
