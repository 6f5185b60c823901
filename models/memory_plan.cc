// PlanMemory: the KV pool a serving engine would allocate (memory.h), term by
// term, per the engine profile (models/engines/<engine>.json).
//
// SGLang (profile_max_num_token):
//   total  = reported - startup - communicators        (free after dist init)
//   KV     = (total - weights as resident) - total x (1 - mem_fraction_static)
// vLLM (determine_available_memory):
//   KV     = runtime total x utilization - (weights as resident + activation
//            peak of the profile run + non-torch memory)
// Both round the pool down to whole pages.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include "common/units.h"
#include "hw/op_pricing.h"
#include "models/dtype_facts.h"
#include "models/engine_profile.h"
#include "models/hybrid_pools.h"
#include "models/memory.h"
#include "models/memory_plan_internal.h"

namespace capplan::models {

namespace memory_plan_internal {

constexpr int64_t kActivationBytes = 2;  // BF16 activations in the profile run

std::string Gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", bytes / kBytesPerGiB);
  return buf;
}

int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

double RoundTo(double v, int decimals) {
  if (decimals < 0) return v;
  const double p = std::pow(10.0, decimals);
  return std::round(v * p) / p;
}

// SGLang's default mem_fraction_static for this GPU and layout
// (server_args.py of the profile's version). Reserve terms are in MiB.
const SglangFractionBucket* FindBucket(const EngineMemoryRule& m, int64_t reported_bytes) {
  const double gpu_mib = reported_bytes / kBytesPerMiB;
  const SglangFractionBucket* b = nullptr;
  for (const SglangFractionBucket& x : m.buckets) {
    if (gpu_mib >= x.min_gpu_gib * 1024 && gpu_mib < x.max_gpu_gib * 1024) b = &x;
  }
  return b;
}

Result<double> SglangDefaultFraction(const EngineProfile& prof, int64_t reported_bytes,
                                     const ParallelLayout& l, const EngineMemoryOptions& o,
                                     const Resolved& r) {
  const double gpu_mib = reported_bytes / kBytesPerMiB;
  const SglangFractionBucket* b = FindBucket(prof.memory, reported_bytes);
  if (b == nullptr) {
    return Status::Invalid("no SGLang " + prof.version + " mem_fraction_static rule for a " +
                           Gib(reported_bytes) +
                           " GiB GPU in models/engines/sglang.json; pass "
                           "--mem-fraction");
  }
  const int pp = 1;  // pipeline parallelism is not modeled
  double reserve = b->base_mib + l.tp * pp * b->per_tp_pp_mib;
  if (b->kind == "itemized") {
    reserve +=
        std::max<double>(r.chunked, b->chunked_prefill_min) * b->chunked_prefill_mib_per_token;
    reserve += r.cgbs * b->cuda_graph_mib_per_bs;
    if (l.dp_attention) {
      reserve += static_cast<double>(r.cgbs) * l.dp * b->dp_mib_per_bs_rank;
      if (r.cgbs > b->dp_extra_threshold_bs) {
        reserve += static_cast<double>(r.cgbs) * l.dp * b->dp_extra_mib_per_bs_rank;
      }
    }
    if (gpu_mib > b->floor_above_gpu_mib) reserve = std::max(reserve, b->floor_mib);
  } else if (l.dp_attention) {
    reserve += b->dp_attention_mib;
  }
  if (o.speculative()) reserve += b->speculative_mib;
  return RoundTo((gpu_mib - reserve) / gpu_mib, prof.memory.round_decimals);
}

// NCCL communicators and custom all-reduce buffers (SGLang's dist init;
// vLLM's non-torch memory), plus NVLS buffers when NCCL uses them.
int64_t CommunicatorBytes(const EngineMemoryRule& m, int tp) {
  if (m.kind == MemoryRuleKind::kSglangStaticFraction) {
    return tp > 1 ? m.dist_init_bytes : m.dist_init_tp1_bytes;
  }
  return tp > 1 ? m.non_torch_bytes : m.non_torch_tp1_bytes;
}

const ComponentWeights* FindComponent(const WeightBreakdown& w, Component c) {
  for (const ComponentWeights& x : w.components) {
    if (x.component == c) return &x;
  }
  return nullptr;
}

// What the engine keeps on every rank beside the checkpoint shards.
std::vector<MemoryTerm> ResidentExtras(const ModelCard& c, const ParallelLayout& l,
                                       const WeightBreakdown& w, const EngineProfile& prof,
                                       const EngineMemoryRule& m) {
  std::vector<MemoryTerm> out;
  const ComponentWeights* shared = FindComponent(w, Component::kSharedExperts);
  const ComponentWeights* experts = FindComponent(w, Component::kExperts);
  if (m.shared_expert_copies == SharedExpertCopies::kPerTpRank && shared != nullptr &&
      experts != nullptr && l.ep == 1 && l.tp > 1 && shared->format.dtype == Dtype::kFp8E4m3 &&
      experts->format.dtype == Dtype::kFp8E4m3) {
    out.push_back({"fused_shared_expert_bytes", "shared-expert copies fused into the routed MoE",
                   (shared->bytes_per_gpu + shared->scale_bytes_per_gpu) * (l.tp - 1),
                   prof.SourceOf("memory.shared_expert_fusion_copies")});
  }
  const int redundant = l.expert.redundant_experts;
  if (redundant > 0 && experts != nullptr && c.n_routed_experts > 0 && l.ep > 1) {
    // The weights hold ceil(E / ep) expert slots per rank (the fullest rank
    // of an uneven split); each rank holds (E + R) / ep, each slot the same
    // bytes as a routed expert on this rank.
    const int64_t routed_slots = (c.n_routed_experts + l.ep - 1) / l.ep;
    const int64_t slots = l.ExpertSlotsPerRank(c.n_routed_experts);
    const int64_t per_rank = experts->bytes_per_gpu + experts->scale_bytes_per_gpu;
    out.push_back({"eplb_redundant_expert_bytes",
                   "EPLB redundant experts' weights (" + std::to_string(redundant) +
                       " over " + std::to_string(l.ep) + " ranks: " + std::to_string(slots) +
                       " expert slots per rank, " + std::to_string(routed_slots) +
                       " in the weights)",
                   per_rank / routed_slots * (slots - routed_slots),
                   "physical experts = routed + redundant, (E + R) / ep per rank "
                   "(SGLang --ep-num-redundant-experts, github.com/sgl-project/sglang "
                   "python/sglang/srt/eplb/expert_location.py; vLLM EPLB num_redundant_experts)"});
  }
  if (m.mla_absorbed_copies && c.attention == AttentionKind::kMla) {
    const int64_t heads = c.num_heads / l.AttentionTp();
    const int64_t per_layer =
        heads * (int64_t{c.qk_nope_head_dim} + c.v_head_dim) * c.kv_lora_rank * 2;  // BF16
    out.push_back({"mla_absorbed_bytes", "BF16 w_kc/w_vc copies of kv_b_proj",
                   per_layer * c.num_layers, prof.SourceOf("memory.mla_absorbed_copies")});
  }
  if (m.rotary_cache_bytes_per_element > 0) {
    const int64_t rot = c.attention == AttentionKind::kMla ? c.qk_rope_head_dim : c.head_dim;
    out.push_back({"rotary_cache_bytes", "rotary cos/sin cache",
                   c.max_position_embeddings * rot * m.rotary_cache_bytes_per_element,
                   prof.SourceOf("memory.rotary_cache_bytes_per_element")});
  }
  const int64_t padded = RoundUp(c.vocab_size, m.vocab_pad_multiple);
  if (padded > c.vocab_size) {
    const ComponentWeights* emb = FindComponent(w, Component::kEmbeddings);
    const int64_t per_row = emb != nullptr && emb->params_total > 0
                                ? (emb->bytes_per_gpu * c.vocab_size / emb->params_total)
                                : 0;
    out.push_back({"vocab_padding_bytes", "vocabulary rows padded for the TP split",
                   (padded - c.vocab_size) * per_row, prof.SourceOf("memory.vocab_pad_multiple")});
  }
  return out;
}

// vLLM's torch peak in profile_run: the sampler's logits over max_num_seqs
// sequences with the batch's hidden states still held, or a dense FFN's
// activations if larger, plus the fused-MoE workspace, over a base of
// buffers every run keeps.
int64_t VllmActivationBytes(const ModelCard& c, const ParallelLayout& l, const EngineProfile& prof,
                            const EngineMemoryRule& m, int64_t tokens) {
  const int64_t seqs = prof.defaults.max_running_min;
  const int64_t vocab = RoundUp(c.vocab_size, m.vocab_pad_multiple);
  const int64_t hidden = tokens * c.hidden_size * kActivationBytes;
  const int64_t sampler = static_cast<int64_t>(
      std::llround(seqs * static_cast<double>(vocab) * m.sampler_bytes_per_element));
  int64_t dense = 0;
  if (c.NumDenseLayers() > 0) {
    const int64_t ffn = c.intermediate_size / l.tp;
    dense = tokens * (2 * int64_t{c.hidden_size} + 3 * ffn) * kActivationBytes;
  }
  int64_t moe = 0;
  if (c.IsMoe() && m.moe_workspace) {
    const int64_t inner = c.moe_intermediate_size / std::max(1, l.tp / l.ep);
    moe = tokens * c.experts_per_token * (3 * inner + c.hidden_size) * kActivationBytes;
  }
  return m.activation_base_bytes + std::max(sampler + hidden, dense) + moe;
}

// SGLang picks a larger chunk and CUDA-graph batch on larger GPUs (B200:
// 16k and 512); an option the user set wins.
void ApplyMemoryClassDefaults(const EngineMemoryRule& m, int64_t reported_bytes,
                              const EngineMemoryOptions& opt, Resolved* r, MemoryPlan* p) {
  if (m.kind != MemoryRuleKind::kSglangStaticFraction) return;
  const SglangFractionBucket* b = FindBucket(m, reported_bytes);
  if (b == nullptr) return;
  if (opt.chunked_prefill_tokens <= 0 && b->chunked_prefill_tokens > 0) {
    r->chunked = static_cast<int64_t>(b->chunked_prefill_tokens);
    p->chunked_prefill_tokens = r->chunked;
  }
  if (opt.cuda_graph_max_bs <= 0 && b->cuda_graph_max_bs > 0) {
    r->cgbs = static_cast<int64_t>(b->cuda_graph_max_bs);
    p->cuda_graph_max_bs = r->cgbs;
  }
}

Result<Resolved> ResolveOptions(const ModelCard& card, const ParallelLayout& layout,
                                const EngineMemoryOptions& opt, MemoryPlan* p) {
  EngineResolution er;
  if (opt.profile != nullptr) {
    er.profile = opt.profile;
    er.version = opt.profile->version;
  } else {
    CAPPLAN_ASSIGN_OR_RETURN(er, ResolveEngine(opt.engine, opt.version));
  }
  Resolved r;
  r.profile = er.profile;
  const EngineDefaults& d = er.profile->defaults;
  r.chunked =
      opt.chunked_prefill_tokens > 0 ? opt.chunked_prefill_tokens : d.chunked_prefill_tokens;
  r.cgbs = opt.cuda_graph_max_bs > 0 ? opt.cuda_graph_max_bs : d.CudaGraphMaxBs(layout.tp);
  r.page = opt.page_size > 0 ? opt.page_size : d.PageSize(card.index_topk > 0);
  r.nvls = opt.nvls.value_or(er.profile->memory.nvls_default) &&
           layout.tp >= er.profile->memory.nvls_min_tp;
  p->engine = opt.engine;
  p->engine_version = er.version;
  p->engine_rule_version = er.profile->version;
  p->version_note = er.note;
  p->knob = er.profile->knob;
  p->rule_source = er.profile->version + ": " + er.profile->rule_source;
  p->page_size = r.page;
  p->chunked_prefill_tokens = r.chunked;
  p->cuda_graph_max_bs = r.cgbs;
  p->nvls = r.nvls;
  return r;
}

Status CheckInputs(const ModelCard& card, const EngineMemoryOptions& opt,
                   const DeviceMemory& device, int64_t context_tokens) {
  if (device.reported_bytes <= 0) return Status::Usage("GPU memory must be positive");
  if (device.runtime_bytes < 0 || device.runtime_bytes > device.reported_bytes) {
    return Status::Usage("the runtime-visible GPU memory must be in [0, the reported total]");
  }
  if (context_tokens < 1 || context_tokens > (int64_t{1} << 32)) {
    return Status::Usage("the context must be in [1, 2^32] tokens, got " +
                         std::to_string(context_tokens));
  }
  if (context_tokens > card.max_position_embeddings) {
    return Status::Invalid("a context of " + std::to_string(context_tokens) + " tokens exceeds " +
                           card.name + "'s max_position_embeddings " +
                           std::to_string(card.max_position_embeddings));
  }
  if (opt.page_size < 0 || opt.page_size > 4096) {
    return Status::Usage("page size must be in [1, 4096], got " + std::to_string(opt.page_size));
  }
  if (opt.mem_fraction && !(*opt.mem_fraction > 0 && *opt.mem_fraction <= 1)) {
    return Status::Usage("--mem-fraction must be in (0, 1], got " +
                         std::to_string(*opt.mem_fraction));
  }
  return Status::Ok();
}

// The weights' formats must run on the device's tensor cores (NVFP4 needs
// sm100 or later): "weights: nvfp4 (experts) runs on ...".
Status CheckFormatsRun(const WeightBreakdown& w, const DeviceMemory& device) {
  if (device.profile == nullptr) return Status::Ok();
  for (const ComponentWeights& c : w.components) {
    Status s = hw::CheckFormatRuns(c.format.dtype, *device.profile);
    if (!s.ok()) {
      return Status::Invalid(std::string("weights: ") + ComponentName(c.component) + ": " +
                             s.message());
    }
  }
  return Status::Ok();
}

}  // namespace memory_plan_internal

using memory_plan_internal::AddKvRange;
using memory_plan_internal::AddPoolAndReserve;
using memory_plan_internal::AddRoomTerms;
using memory_plan_internal::ApplyMemoryClassDefaults;
using memory_plan_internal::CheckFormatsRun;
using memory_plan_internal::CheckInputs;
using memory_plan_internal::ComputeRoom;
using memory_plan_internal::DraftTerms;
using memory_plan_internal::FillPool;
using memory_plan_internal::Gib;
using memory_plan_internal::PlanHybrid;
using memory_plan_internal::PoolPages;
using memory_plan_internal::ResolveOptions;
using memory_plan_internal::Resolved;
using memory_plan_internal::Room;
using memory_plan_internal::RoomInputs;
using memory_plan_internal::SglangDefaultFraction;

int64_t MemoryPlan::Term(const std::string& key) const {
  for (const MemoryTerm& t : terms) {
    if (t.key == key) return t.bytes;
  }
  return 0;
}

Result<MemoryPlan> PlanMemory(const ModelCard& card, const ParallelLayout& layout,
                              const PrecisionChoice& choice, const EngineMemoryOptions& opt,
                              const DeviceMemory& device, int64_t context_tokens) {
  CAPPLAN_ASSIGN_OR_RETURN(
      MemoryPlan p, PlanMemoryAllowShortfall(card, layout, choice, opt, device, context_tokens));
  if (p.weights_shortfall_bytes > 0) {
    char frac[16];
    std::snprintf(frac, sizeof frac, "%.3f", p.mem_fraction);
    return Status::Invalid(
        card.name + ": weights need " + Gib(p.weights_resident_bytes) + " GiB per GPU as " +
        opt.engine + " holds them, but " + p.knob + " " + frac + " leaves " +
        Gib(p.weight_room_bytes_per_gpu) + " GiB of the " + Gib(device.reported_bytes) +
        " GiB GPU for weights and KV: " + Gib(p.weights_shortfall_bytes) +
        " GiB short per GPU; use more GPUs, lower-precision weights (--weights fp8|int4) or a "
        "higher --mem-fraction");
  }
  return p;
}

Result<MemoryPlan> PlanMemoryAllowShortfall(const ModelCard& card, const ParallelLayout& layout,
                                            const PrecisionChoice& choice,
                                            const EngineMemoryOptions& opt,
                                            const DeviceMemory& device, int64_t context_tokens) {
  CAPPLAN_RETURN_IF_ERROR(CheckInputs(card, opt, device, context_tokens));
  MemoryPlan p;
  CAPPLAN_ASSIGN_OR_RETURN(Resolved r, ResolveOptions(card, layout, opt, &p));
  const EngineProfile& prof = *r.profile;
  const EngineMemoryRule& m = prof.memory;
  ApplyMemoryClassDefaults(m, device.reported_bytes, opt, &r, &p);
  CAPPLAN_ASSIGN_OR_RETURN(p.weights, ComputeWeights(card, layout, choice));
  CAPPLAN_RETURN_IF_ERROR(CheckFormatsRun(p.weights, device));
  CAPPLAN_ASSIGN_OR_RETURN(
      p.resident_weights,
      memory_plan_internal::ResidentWeights(
          card, layout, p.weights, prof,
          device.profile != nullptr ? device.profile->architecture : std::string()));
  CAPPLAN_ASSIGN_OR_RETURN(const DtypeFacts* facts, GetDtypeFacts());
  CAPPLAN_RETURN_IF_ERROR(facts->CheckKvOnEngine(choice.kv_cache, opt.engine));
  CAPPLAN_ASSIGN_OR_RETURN(p.kv, ComputeKvLayout(card, layout, choice.kv_cache));
  p.gpu_memory_bytes = device.reported_bytes;
  p.context_tokens = context_tokens;
  p.attention_ranks = layout.AttentionRanks();
  p.mem_fraction_defaulted = !opt.mem_fraction.has_value();
  int64_t bytes_per_token = p.kv.bytes_per_token;
  CAPPLAN_ASSIGN_OR_RETURN(const std::vector<MemoryTerm> draft,
                           DraftTerms(card, layout, choice, opt, &bytes_per_token, &p));
  if (opt.mem_fraction) {
    p.mem_fraction = *opt.mem_fraction;
  } else if (m.kind == MemoryRuleKind::kSglangStaticFraction) {
    CAPPLAN_ASSIGN_OR_RETURN(p.mem_fraction,
                             SglangDefaultFraction(prof, device.reported_bytes, layout, opt, r));
  } else {
    p.mem_fraction = m.utilization_default;
  }
  const RoomInputs in{&card, &layout, &device, &prof, &r, &p, &draft};
  const Room room = ComputeRoom(in, m);
  p.weights_resident_bytes = room.resident;
  AddRoomTerms(in, room, &p);
  p.weight_room_bytes_per_gpu = static_cast<int64_t>(std::max(0.0, room.weight_room));

  const int64_t page = m.page_align ? r.page : 1;
  const int64_t reserved_pages = m.kind == MemoryRuleKind::kVllmProfileRun ? m.null_block_pages : 0;
  if (UsesHybridPools(card, m.hybrid)) {
    if (opt.speculative()) {
      return Status::Invalid(card.name +
                             ": speculative decoding with the engine's hybrid "
                             "(state or window) pools is not modelled");
    }
    const HybridPoolInputs hin{&card, &layout,        &p.kv,         &m.hybrid,
                               page,  reserved_pages, context_tokens};
    CAPPLAN_RETURN_IF_ERROR(PlanHybrid(hin, in, room, &p));
    AddPoolAndReserve(m, &p);
    return p;
  }
  const auto tokens_of = [&](double kv_room) {
    return PoolPages(kv_room, bytes_per_token * page, reserved_pages) * page * p.attention_ranks;
  };
  if (room.kv_room > 0) {
    const int64_t pages = PoolPages(room.kv_room, bytes_per_token * page, reserved_pages);
    if (pages < 1) {
      return Status::Invalid(card.name + ": weights fit but leave only " + Gib(room.kv_room) +
                             " GiB per GPU, less than one " + std::to_string(page) +
                             "-token KV page (" + std::to_string(bytes_per_token * page) +
                             " B); use more GPUs or lower-precision weights");
    }
    FillPool(pages * page, bytes_per_token, r.page, &p);
  } else {
    p.weights_shortfall_bytes =
        std::max<int64_t>(1, static_cast<int64_t>(std::ceil(-room.kv_room)));
  }
  AddKvRange(in, tokens_of, &p);
  AddPoolAndReserve(m, &p);
  return p;
}

}  // namespace capplan::models
