// PlanMemory: the KV pool a serving engine would allocate (memory.h), per
// the engine rules in models/engine_rules.json (engine-memory.md 2.1-2.3).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "models/engine_rules.h"
#include "models/memory.h"

namespace capplan {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

std::string Gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", bytes / kGiB);
  return buf;
}

double RoundTo(double v, int decimals) {
  const double p = std::pow(10.0, decimals);
  return std::round(v * p) / p;
}

// SGLang's default mem_fraction_static for this GPU and layout
// (server_args.py, engine-memory.md 2.2). Reserve terms are in MiB.
Result<double> SglangDefaultFraction(const EngineRules& rules, const EngineRule& rule,
                                     int64_t gpu_bytes, const ParallelLayout& l,
                                     const EngineMemoryOptions& o) {
  const double gpu_mib = gpu_bytes / kMiB;
  const SglangBucket* b = nullptr;
  for (const SglangBucket& x : rule.buckets) {
    if (gpu_mib >= x.min_gpu_gib * 1024 && gpu_mib < x.max_gpu_gib * 1024) b = &x;
  }
  if (b == nullptr) {
    return Status::Invalid("no SGLang " + rule.name + " mem_fraction_static rule for a " +
                           Gib(gpu_bytes) + " GiB GPU in models/engine_rules.json; pass "
                           "--mem-fraction");
  }
  const int pp = 1;  // pipeline parallelism is not modeled
  double reserve = b->base_mib + l.tp * pp * b->per_tp_pp_mib;
  if (rule.kind == "older") {
    if (o.speculative) reserve += b->speculative_mib;
    if (l.dp_attention) reserve += b->dp_attention_mib;
  } else {
    const int chunked = o.chunked_prefill_tokens > 0 ? o.chunked_prefill_tokens
                                                     : b->chunked_prefill_default;
    const int cgbs = o.cuda_graph_max_bs > 0 ? o.cuda_graph_max_bs
                     : l.tp >= b->large_tp_from ? b->cuda_graph_max_bs_large_tp
                                                : b->cuda_graph_max_bs_small_tp;
    reserve += std::max<double>(chunked, b->chunked_prefill_min) * b->chunked_prefill_mib_per_token;
    reserve += cgbs * b->cuda_graph_mib_per_bs;
    if (l.dp_attention) {
      reserve += static_cast<double>(cgbs) * l.dp * b->dp_mib_per_bs_rank;
      if (cgbs > b->dp_extra_threshold_bs) reserve += static_cast<double>(cgbs) * l.dp * b->dp_extra_mib_per_bs_rank;
    }
    if (gpu_mib > b->floor_above_gpu_mib) reserve = std::max(reserve, b->floor_mib);
    if (o.speculative) reserve += b->speculative_mib;
  }
  return RoundTo((gpu_mib - reserve) / gpu_mib, rules.sglang_round_decimals);
}

// vLLM's profile_run torch peak, estimated (engine_rules.json
// activation_source): the residual stream, its normed copy and the widest
// per-token projection output for max_num_batched_tokens tokens, plus the
// sampler's fp32 logits.
int64_t VllmActivationBytes(const ModelCard& c, const ParallelLayout& l, const EngineRule& r,
                            int64_t tokens) {
  const int64_t attn_tp = l.AttentionTp(), tp = l.tp;
  int64_t attn = 0;
  if (c.attention == AttentionKind::kGqa) {
    const int64_t kvh = std::max<int64_t>(1, c.num_kv_heads / attn_tp);
    attn = (c.num_heads / attn_tp + 2 * kvh) * c.head_dim;
  } else {
    const int64_t h = c.num_heads / attn_tp;
    attn = std::max(h * (c.qk_nope_head_dim + c.qk_rope_head_dim),
                    h * (c.qk_nope_head_dim + c.v_head_dim));
  }
  int64_t ffn = 0;
  if (c.NumDenseLayers() > 0) ffn = 2 * int64_t{c.intermediate_size} / tp;
  if (c.IsMoe()) {
    const int64_t inner = std::max<int64_t>(1, tp / l.ep);
    ffn = std::max<int64_t>(ffn, int64_t{c.experts_per_token} * 2 * c.moe_intermediate_size / inner);
  }
  const int64_t per_token = 2 * int64_t{c.hidden_size} + std::max(attn, ffn);
  return tokens * per_token * r.activation_bytes_per_element +
         int64_t{r.max_num_seqs} * c.vocab_size * r.logits_bytes_per_element;
}

}  // namespace

Result<MemoryPlan> PlanMemory(const ModelCard& card, const ParallelLayout& layout,
                              const PrecisionChoice& choice, const EngineMemoryOptions& opt,
                              int64_t gpu_memory_bytes, int64_t context_tokens) {
  CAPPLAN_ASSIGN_OR_RETURN(MemoryPlan p, PlanMemoryAllowShortfall(card, layout, choice, opt,
                                                                  gpu_memory_bytes, context_tokens));
  if (p.weights_shortfall_bytes > 0) {
    const std::string knob =
        opt.engine == "sglang" ? "mem_fraction_static" : "gpu_memory_utilization";
    char frac[16];
    std::snprintf(frac, sizeof frac, "%.3f", p.mem_fraction);
    return Status::Invalid(
        card.name + ": weights need " + Gib(p.weights.bytes_per_gpu) + " GiB per GPU but " +
        opt.engine + " " + knob + " " + frac + " leaves " + Gib(p.weight_room_bytes_per_gpu) +
        " GiB of the " + Gib(gpu_memory_bytes) + " GiB GPU for weights and KV: " +
        Gib(p.weights_shortfall_bytes) + " GiB short per GPU; use more GPUs, lower-precision "
        "weights (--weights fp8|int4) or a higher --mem-fraction");
  }
  return p;
}

Result<MemoryPlan> PlanMemoryAllowShortfall(const ModelCard& card, const ParallelLayout& layout,
                                            const PrecisionChoice& choice,
                                            const EngineMemoryOptions& opt,
                                            int64_t gpu_memory_bytes, int64_t context_tokens) {
  if (gpu_memory_bytes <= 0) return Status::Usage("GPU memory must be positive");
  if (context_tokens < 1 || context_tokens > (int64_t{1} << 32)) {
    return Status::Usage("--context-tokens must be in [1, 2^32], got " +
                         std::to_string(context_tokens));
  }
  if (context_tokens > card.max_position_embeddings) {
    return Status::Invalid("--context-tokens " + std::to_string(context_tokens) + " exceeds " +
                           card.name + "'s max_position_embeddings " +
                           std::to_string(card.max_position_embeddings));
  }
  if (opt.page_size < 1 || opt.page_size > 4096) {
    return Status::Usage("page size must be in [1, 4096], got " + std::to_string(opt.page_size));
  }
  if (opt.mem_fraction && !(*opt.mem_fraction > 0 && *opt.mem_fraction <= 1)) {
    return Status::Usage("--mem-fraction must be in (0, 1], got " +
                         std::to_string(*opt.mem_fraction));
  }
  CAPPLAN_ASSIGN_OR_RETURN(const EngineRules* rules, GetEngineRules());
  MemoryPlan p;
  CAPPLAN_ASSIGN_OR_RETURN(const EngineRule* rule,
                           FindEngineRule(*rules, opt.engine, opt.version, &p.engine_version));
  CAPPLAN_ASSIGN_OR_RETURN(p.weights, ComputeWeights(card, layout, choice));
  CAPPLAN_ASSIGN_OR_RETURN(p.kv, ComputeKvLayout(card, layout, choice.kv_cache));
  p.engine = opt.engine;
  p.rule_source = rule->name + ": " + rule->source;
  p.gpu_memory_bytes = gpu_memory_bytes;
  p.context_tokens = context_tokens;
  p.attention_ranks = layout.AttentionRanks();
  p.mem_fraction_defaulted = !opt.mem_fraction.has_value();

  int64_t bytes_per_token = p.kv.bytes_per_token;
  if (opt.speculative && card.mtp_layers > 0) {
    // EAGLE/MTP draft layers keep their own KV: cell_size x (1 + draft/L)
    // (engine-memory.md 2.1).
    bytes_per_token += bytes_per_token * card.mtp_layers / card.num_layers;
  }
  const int64_t weights = p.weights.bytes_per_gpu;
  double kv_room = 0;         // bytes the KV pool may use on one GPU
  double weight_room = 0;     // what the engine leaves for weights + KV
  int64_t reserved_pages = 0;
  if (opt.engine == "sglang") {
    if (opt.mem_fraction) {
      p.mem_fraction = *opt.mem_fraction;
    } else {
      CAPPLAN_ASSIGN_OR_RETURN(p.mem_fraction, SglangDefaultFraction(*rules, *rule,
                                                                     gpu_memory_bytes, layout, opt));
    }
    // KV = total x mfs - (weights + anything else allocated before profiling).
    weight_room = gpu_memory_bytes * p.mem_fraction - rules->sglang_pre_kv_other_bytes;
    kv_room = weight_room - weights;
    p.reserve_bytes_per_gpu =
        static_cast<int64_t>(gpu_memory_bytes * (1 - p.mem_fraction)) + rules->sglang_pre_kv_other_bytes;
  } else {
    p.mem_fraction = opt.mem_fraction ? *opt.mem_fraction : rule->utilization_default;
    const double requested = std::ceil(gpu_memory_bytes * p.mem_fraction);
    const int64_t act = VllmActivationBytes(card, layout, *rule, opt.chunked_prefill_tokens);
    const int64_t other = act + rule->non_torch_bytes + rule->cudagraph_bytes;
    weight_room = requested - other;
    kv_room = weight_room - weights;
    p.reserve_bytes_per_gpu = gpu_memory_bytes - static_cast<int64_t>(requested) + other;
    reserved_pages = rule->null_block_pages;
  }
  p.weight_room_bytes_per_gpu = static_cast<int64_t>(std::max(0.0, weight_room));
  if (kv_room <= 0) {
    p.weights_shortfall_bytes = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(-kv_room)));
    return p;  // KV fields stay 0
  }
  // SGLang rounds its pool down to whole pages (page_align); vLLM allocates
  // whole blocks.
  const int64_t page = opt.engine == "sglang" && !rules->sglang_page_align ? 1 : opt.page_size;
  int64_t pages = static_cast<int64_t>(kv_room / static_cast<double>(bytes_per_token * page));
  pages -= reserved_pages;
  if (pages < 1) {
    return Status::Invalid(card.name + ": weights fit but leave only " + Gib(kv_room) +
                           " GiB per GPU, less than one " + std::to_string(page) +
                           "-token KV page (" + std::to_string(bytes_per_token * page) +
                           " B); use more GPUs or lower-precision weights");
  }
  p.kv_tokens_per_rank = pages * page;
  p.kv_pool_bytes_per_gpu = p.kv_tokens_per_rank * bytes_per_token;
  p.kv_capacity_tokens = p.kv_tokens_per_rank * p.attention_ranks;
  const int64_t pages_per_request = (context_tokens + page - 1) / page;
  p.max_concurrent_requests = (pages / pages_per_request) * p.attention_ranks;
  return p;
}

}  // namespace capplan
