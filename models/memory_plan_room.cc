// The room a memory rule leaves for KV on one GPU and the pool it becomes
// (PlanMemory's second half, models/memory_plan.cc).
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "models/hybrid_pools.h"
#include "models/memory_plan_internal.h"

namespace capplan::models::memory_plan_internal {

Room ComputeRoom(const RoomInputs& in, const EngineMemoryRule& m) {
  Room x;
  x.extras = ResidentExtras(*in.card, *in.layout, in.plan->weights, *in.prof, m);
  if (MemoryTerm k = KernelLayoutTerm(in.plan->resident_weights); k.bytes != 0) {
    x.extras.insert(x.extras.begin(), std::move(k));
  }
  x.extras.insert(x.extras.end(), in.draft->begin(), in.draft->end());
  x.resident = in.plan->weights.bytes_per_gpu;
  for (const MemoryTerm& e : x.extras) x.resident += e.bytes;
  x.comm = CommunicatorBytes(m, in.layout->tp);
  x.nvls = in.resolved->nvls ? m.nvls_bytes : 0;
  if (m.kind == MemoryRuleKind::kSglangStaticFraction) {
    const double total =
        static_cast<double>(in.device->reported_bytes - m.startup_bytes - x.comm - x.nvls);
    x.weight_room = total * in.plan->mem_fraction;
  } else {
    const double requested = std::ceil(in.device->RuntimeBytes() * in.plan->mem_fraction);
    x.activation = VllmActivationBytes(*in.card, *in.layout, *in.prof, m, in.resolved->chunked);
    x.weight_room = requested - x.activation - x.comm - x.nvls;
  }
  x.kv_room = x.weight_room - x.resident;
  return x;
}

// Whole KV pages one rank holds in `kv_room` bytes, less the pages the
// engine keeps back; 0 when not even one page fits.
int64_t PoolPages(double kv_room, int64_t bytes_per_page, int64_t reserved_pages) {
  if (kv_room <= 0) return 0;
  const int64_t pages = static_cast<int64_t>(kv_room / static_cast<double>(bytes_per_page));
  return std::max<int64_t>(0, pages - reserved_pages);
}

// The plan's terms in the order `capacity` prints them (the KV pool and the
// reserve are added once the pool is known).
void AddRoomTerms(const RoomInputs& in, const Room& x, MemoryPlan* p) {
  const EngineProfile& prof = *in.prof;
  const bool tp1 = in.layout->tp == 1;
  std::vector<MemoryTerm>& t = p->terms;
  if (prof.memory.kind == MemoryRuleKind::kSglangStaticFraction) {
    t.push_back({"startup_bytes", "CUDA context and driver reserve before the engine starts",
                 prof.memory.startup_bytes, prof.SourceOf("memory.startup_bytes")});
    t.push_back({"communicator_bytes", "NCCL communicators and custom all-reduce buffers", x.comm,
                 prof.SourceOf(tp1 ? "memory.dist_init_tp1_bytes" : "memory.dist_init_bytes")});
  } else {
    t.push_back({"activation_peak_bytes",
                 "profile run's torch peak at max_num_batched_tokens (sampler, hidden states, "
                 "MoE workspace)",
                 x.activation,
                 prof.SourceOf("memory.sampler_bytes_per_element") + "; " +
                     prof.SourceOf("memory.activation_base_bytes") +
                     (in.card->IsMoe() ? "; " + prof.SourceOf("memory.moe_workspace") : "")});
    t.push_back({"communicator_bytes", "non-torch memory: NCCL and custom all-reduce buffers",
                 x.comm,
                 prof.SourceOf(tp1 ? "memory.non_torch_tp1_bytes" : "memory.non_torch_bytes")});
  }
  if (x.nvls > 0) {
    t.push_back({"nvls_bytes", "NCCL NVLS (NVLink SHARP) buffers", x.nvls,
                 prof.SourceOf("memory.nvls_bytes")});
  }
  t.push_back({"weights_bytes", "checkpoint shards (values and scales)", p->weights.bytes_per_gpu,
               "models/cards/" + in.card->name + ".json and the weight formats"});
  for (const MemoryTerm& e : x.extras) t.push_back(e);
}

// The pool of `tokens_per_rank` tokens and the requests of the plan's
// context that fit in it.
void FillPool(int64_t tokens_per_rank, int64_t bytes_per_token, int64_t page, MemoryPlan* p) {
  p->kv_tokens_per_rank = tokens_per_rank;
  p->kv_pool_bytes_per_gpu = tokens_per_rank * bytes_per_token;
  p->kv_capacity_tokens = tokens_per_rank * p->attention_ranks;
  const int64_t pages_per_request = (p->context_tokens + page - 1) / page;
  p->max_concurrent_requests = (tokens_per_rank / page / pages_per_request) * p->attention_ranks;
}

// The KV pool's term and the reserve, which closes the sum to the device.
void AddPoolAndReserve(const EngineMemoryRule& m, MemoryPlan* p) {
  const HybridPools& h = p->hybrid;
  p->terms.push_back(
      {"kv_pool_bytes",
       h.block_tokens > 0 ? "KV cache pool: blocks shared by full, window and state groups"
       : h.active()       ? "KV cache pool of the full-attention and window layers"
                          : "KV cache pool",
       p->kv_pool_bytes_per_gpu,
       h.active() ? "the engine's hybrid pool rules (memory.hybrid_pools)"
                  : "KV bytes per token from the card's attention layout x whole pages"});
  int64_t used = 0;
  for (const MemoryTerm& x : p->terms) used += x.bytes;
  p->reserve_bytes_per_gpu = p->gpu_memory_bytes - used;
  p->terms.push_back(
      {"reserve_bytes",
       m.kind == MemoryRuleKind::kSglangStaticFraction
           ? "left by mem_fraction_static for CUDA graphs, activations, page rounding"
           : "outside gpu_memory_utilization, plus page rounding and null block",
       p->reserve_bytes_per_gpu, p->rule_source});
}

// kv_tokens_lo/hi: each ranged term that changes this plan's pool, at its
// two ends with the rest at their values; then all of them at once at the
// end that gives less KV, and at the one that gives more.
void AddKvRange(const RoomInputs& in, const std::function<int64_t(double)>& tokens_of,
                MemoryPlan* p) {
  const EngineProfile& prof = *in.prof;
  EngineMemoryRule less = prof.memory, more = prof.memory;
  for (const auto& [key, range] : prof.memory_ranges) {
    const double at_lo = ComputeRoom(in, WithMemoryTerm(prof.memory, key, range.lo)).kv_room;
    const double at_hi = ComputeRoom(in, WithMemoryTerm(prof.memory, key, range.hi)).kv_room;
    if (at_lo == at_hi) continue;  // not a term of this plan
    p->kv_range_terms.push_back({key, range.lo, range.value, range.hi, tokens_of(at_lo),
                                 tokens_of(at_hi), prof.SourceOf("memory." + key)});
    const bool lo_gives_less = at_lo < at_hi;
    less = WithMemoryTerm(less, key, lo_gives_less ? range.lo : range.hi);
    more = WithMemoryTerm(more, key, lo_gives_less ? range.hi : range.lo);
  }
  p->kv_tokens_lo = std::min(p->kv_capacity_tokens, tokens_of(ComputeRoom(in, less).kv_room));
  p->kv_tokens_hi = std::max(p->kv_capacity_tokens, tokens_of(ComputeRoom(in, more).kv_room));
}

// The speculative draft layers' weights, as a resident term (empty without
// speculative decoding); widens *bytes_per_token by the draft's own KV.
Result<std::vector<MemoryTerm>> DraftTerms(const ModelCard& card, const ParallelLayout& layout,
                                           const PrecisionChoice& choice,
                                           const EngineMemoryOptions& opt, int64_t* bytes_per_token,
                                           MemoryPlan* p) {
  if (!opt.speculative()) return std::vector<MemoryTerm>{};
  CAPPLAN_ASSIGN_OR_RETURN(const ModelCard draft, DraftCard(card, opt.draft, opt.draft_layers));
  // EAGLE/MTP draft layers keep their own KV: cell_size x (1 + draft/L).
  *bytes_per_token += *bytes_per_token * draft.num_layers / card.num_layers;
  CAPPLAN_ASSIGN_OR_RETURN(const WeightBreakdown dw, ComputeWeights(draft, layout, choice));
  int64_t draft_bytes = 0;
  for (const auto& c : dw.components) {
    if (c.component != Component::kEmbeddings)
      draft_bytes += c.bytes_per_gpu + c.scale_bytes_per_gpu;
  }
  p->draft_weights_bytes = draft_bytes;
  return std::vector<MemoryTerm>{
      {"draft_weights_bytes",
       "speculative draft layers (embedding and LM head shared with the target)", draft_bytes,
       "models/cards/" + card.name + ".json (DraftCard)"}};
}

// A hybrid model's pools (hybrid_pools.h) in place of the one KV pool:
// the full-attention KV tokens, the state pool's term (SGLang) and the
// requests of the plan's context that every pool can hold.
Status PlanHybrid(const HybridPoolInputs& hin, const RoomInputs& in, const Room& room,
                  MemoryPlan* p) {
  const auto tokens_of = [&](double kv_room) -> int64_t {
    auto x = PlanHybridPools(hin, kv_room);
    return x.ok() ? x->kv_tokens_per_rank * p->attention_ranks : 0;
  };
  CAPPLAN_ASSIGN_OR_RETURN(HybridPoolPlan h, PlanHybridPools(hin, std::max(0.0, room.kv_room)));
  if (room.kv_room <= 0) {
    p->weights_shortfall_bytes =
        std::max<int64_t>(1, static_cast<int64_t>(std::ceil(-room.kv_room)));
  } else if (h.pools.requests_per_rank < 1 && h.kv_tokens_per_rank < 1) {
    return Status::Invalid(hin.card->name + ": weights fit but leave only " + Gib(room.kv_room) +
                           " GiB per GPU, too little for the engine's KV and state pools; use "
                           "more GPUs or lower-precision weights");
  }
  p->hybrid = h.pools;
  p->kv_tokens_per_rank = h.kv_tokens_per_rank;
  p->kv_pool_bytes_per_gpu = h.kv_pool_bytes;
  p->kv_capacity_tokens = h.kv_tokens_per_rank * p->attention_ranks;
  p->max_concurrent_requests = h.pools.requests_per_rank * p->attention_ranks;
  if (h.pools.block_tokens > 0) p->page_size = h.pools.block_tokens;
  AddKvRange(in, tokens_of, p);
  if (h.state_pool_bytes > 0) {
    p->terms.push_back({"state_pool_bytes",
                        "linear-attention state pool: " +
                            std::to_string(h.pools.state_slots_per_rank) + " sequence states",
                        h.state_pool_bytes, in.prof->SourceOf("memory.hybrid_pools.linear")});
  }
  return Status::Ok();
}

}  // namespace capplan::models::memory_plan_internal
