// Pools of hybrid models per engine rule (hybrid_pools.h).
//
// SGLang (model_runner profile_max_num_token, 0.5.x):
//   linear: state = rest x r / (1 + r) (r = mamba_full_memory_ratio) in
//     whole per-sequence slots; KV = (rest - slots x state) / full-layer cell
//   local:  T = rest / all-layer cell; full = T x L / (ratio x local + global),
//     swa = full x ratio (set_num_tokens_hybrid_swa)
// vLLM (hybrid KV cache manager): one pool of blocks, each block one group
//   of layers_per_group layers x block_size tokens; a full group holds every
//   token, a local group the window's blocks, a linear group one block per
//   sequence (the state, padded to the attention page).
#include "models/hybrid_pools.h"

#include <algorithm>
#include <string>

#include "models/dtype_facts.h"

namespace capplan::models {

namespace {

using Local = HybridPoolRule::Local;
using Linear = HybridPoolRule::Linear;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// "model" is the checkpoint's 16-bit dtype (bf16 or fp16): 2 bytes.
int64_t StateDtypeBytes(const std::string& name) { return name == "fp32" ? 4 : 2; }

// Blocks (or pages) one request of `ctx` tokens keeps for a window-limited
// group: the window's last tokens, in whole blocks, never more than it has.
int64_t WindowBlocks(int64_t ctx, int64_t window, int64_t block) {
  return std::min(CeilDiv(ctx, block), CeilDiv(window - 1, block) + 1);
}

HybridPools Counts(const ModelCard& c) {
  HybridPools h;
  h.linear_layers = c.linear_attention.layers;
  h.local_layers = c.sliding_window_layers;
  h.global_layers = c.FullAttentionLayers() - c.sliding_window_layers;
  return h;
}

Result<HybridPoolPlan> SglangLinear(const HybridPoolInputs& in, double kv_room) {
  const HybridPoolRule& r = *in.rule;
  HybridPoolPlan out;
  HybridPools& h = out.pools;
  h = Counts(*in.card);
  h.linear_rule = "ratio_of_rest";
  h.state_bytes_per_sequence = LinearStateBytes(*in.card, *in.layout, r, h.linear_layers);
  const double state_room = kv_room * r.mamba_full_memory_ratio / (1 + r.mamba_full_memory_ratio);
  h.state_slots_per_rank =
      std::max<int64_t>(0, static_cast<int64_t>(state_room / h.state_bytes_per_sequence));
  h.state_slots_per_request = r.state_slots_per_request;
  out.state_pool_bytes = h.state_slots_per_rank * h.state_bytes_per_sequence;
  const double rest = kv_room - static_cast<double>(out.state_pool_bytes);
  const int64_t cell = in.kv->bytes_per_token;
  const int64_t tokens = rest > 0 ? static_cast<int64_t>(rest / cell) / in.page * in.page : 0;
  out.kv_tokens_per_rank = tokens;
  out.kv_pool_bytes = tokens * cell;
  const int64_t per_request = CeilDiv(in.context_tokens, in.page);
  h.requests_per_rank = std::min(tokens / in.page / per_request,
                                 h.state_slots_per_rank / h.state_slots_per_request);
  return out;
}

HybridPoolPlan SglangSwa(const HybridPoolInputs& in, double kv_room) {
  const HybridPoolRule& r = *in.rule;
  const ModelCard& c = *in.card;
  HybridPoolPlan out;
  HybridPools& h = out.pools;
  h = Counts(c);
  h.local_rule = "swa_ratio";
  const int64_t layers = c.FullAttentionLayers();
  const int64_t per_layer = in.kv->bytes_per_token / layers;
  const int64_t total = static_cast<int64_t>(kv_room / in.kv->bytes_per_token) * layers;
  const int64_t full = static_cast<int64_t>(
      static_cast<double>(total) / (r.swa_full_tokens_ratio * h.local_layers + h.global_layers));
  const int64_t swa = static_cast<int64_t>(full * r.swa_full_tokens_ratio);
  out.kv_tokens_per_rank = full / in.page * in.page;
  h.local_tokens_per_rank = swa / in.page * in.page;
  out.kv_pool_bytes = per_layer * (out.kv_tokens_per_rank * h.global_layers +
                                   h.local_tokens_per_rank * h.local_layers);
  const int64_t pages = CeilDiv(in.context_tokens, in.page);
  const int64_t local_pages =
      r.local_holds_whole_request ? pages : WindowBlocks(in.context_tokens, c.sliding_window, in.page);
  h.requests_per_rank = std::min(out.kv_tokens_per_rank / in.page / pages,
                                 h.local_tokens_per_rank / in.page / local_pages);
  return out;
}

Result<HybridPoolPlan> VllmBlocks(const HybridPoolInputs& in, double kv_room) {
  const HybridPoolRule& r = *in.rule;
  const ModelCard& c = *in.card;
  HybridPoolPlan out;
  HybridPools& h = out.pools;
  h = Counts(c);
  const bool local = r.local == Local::kWindowBlocks && h.local_layers > 0;
  const bool linear = r.linear == Linear::kStateBlock && h.linear_layers > 0;
  if (local) h.local_rule = "window_blocks";
  if (linear) h.linear_rule = "state_block";
  const int64_t attn_1tok = in.kv->bytes_per_token / c.FullAttentionLayers();
  int64_t block = in.page;
  if (linear) {
    const int64_t state_page = LinearStateBytes(c, *in.layout, r, 1);
    const int64_t align = r.block_alignment_tokens;
    block = std::max(block, align * CeilDiv(state_page, align * attn_1tok));
    h.state_bytes_per_sequence = LinearStateBytes(c, *in.layout, r, h.linear_layers);
  }
  // Layers per group: the fewest of any kind (vLLM's grouping heuristic);
  // a kind not split by it is padded to whole groups.
  const int64_t global = h.global_layers;
  const int64_t locals = local ? h.local_layers : 0, linears = linear ? h.linear_layers : 0;
  int64_t g = global;
  for (int64_t n : {locals, linears}) g = n > 0 ? std::min(g, n) : g;
  h.layers_per_group = g;
  h.full_groups = static_cast<int>(CeilDiv(global, g));
  h.local_groups = static_cast<int>(CeilDiv(locals, g));
  h.state_groups = static_cast<int>(CeilDiv(linears, g));
  h.block_tokens = block;
  const int64_t block_bytes = g * block * attn_1tok;
  const int64_t blocks = std::max<int64_t>(
      0, static_cast<int64_t>(kv_room / static_cast<double>(block_bytes)) - in.reserved_blocks);
  h.blocks_per_rank = blocks;
  h.state_slots_per_request = h.state_groups;
  out.kv_pool_bytes = blocks * block_bytes;
  out.kv_tokens_per_rank = blocks / h.full_groups * block;
  const int64_t per_request =
      h.full_groups * CeilDiv(in.context_tokens, block) +
      h.local_groups * (local ? WindowBlocks(in.context_tokens, c.sliding_window, block) : 0) +
      h.state_groups;
  h.requests_per_rank = blocks / per_request;
  return out;
}

}  // namespace

bool UsesHybridPools(const ModelCard& card, const HybridPoolRule& rule) {
  if (card.IsHybridLinear()) return true;
  return card.sliding_window_layers > 0 && rule.local != Local::kPerToken;
}

int64_t LinearStateBytes(const ModelCard& c, const ParallelLayout& l, const HybridPoolRule& r,
                         int layers) {
  const LinearAttention& la = c.linear_attention;
  const int64_t tp = std::max(1, l.AttentionTp());
  const LinearStateFormat f = LinearStateFormatOf(r);
  const int64_t conv = la.ConvDim() / tp * (la.conv_kernel - 1) * f.conv_bytes;
  const int64_t ssm =
      int64_t{la.num_value_heads} / tp * la.key_head_dim * la.value_head_dim * f.ssm_bytes;
  return (conv + ssm) * layers;
}

LinearStateFormat LinearStateFormatOf(const HybridPoolRule& rule) {
  return LinearStateFormat{StateDtypeBytes(rule.ssm_state_dtype),
                           StateDtypeBytes(rule.conv_state_dtype)};
}

Result<HybridPoolPlan> PlanHybridPools(const HybridPoolInputs& in, double kv_room) {
  const ModelCard& c = *in.card;
  const HybridPoolRule& r = *in.rule;
  if (c.IsHybridLinear()) {
    if (r.linear == Linear::kRatioOfRest) return SglangLinear(in, kv_room);
    if (r.linear == Linear::kStateBlock) return VllmBlocks(in, kv_room);
    return Status::Invalid(c.name + " has linear-attention layers, which this engine version "
                                    "does not serve (memory.hybrid_pools.linear_state none); pick "
                                    "a later --engine-version");
  }
  if (r.local == Local::kSwaRatio) return SglangSwa(in, kv_room);
  return VllmBlocks(in, kv_room);
}

}  // namespace capplan::models
