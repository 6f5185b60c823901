// PlanMemory's parts shared by memory_plan.cc (engine options and resident
// terms) and memory_plan_room.cc (the room left for KV and its pool); not a
// public header.
#ifndef CAPPLAN_MODELS_MEMORY_PLAN_INTERNAL_H_
#define CAPPLAN_MODELS_MEMORY_PLAN_INTERNAL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/engine_profile.h"
#include "models/hybrid_pools.h"
#include "models/memory.h"

namespace capplan::models::memory_plan_internal {

// The engine options a plan resolved against the profile.
struct Resolved {
  const EngineProfile* profile = nullptr;
  int64_t chunked = 0, cgbs = 0, page = 0;
  bool nvls = false;
};

// What one memory rule leaves for KV on one GPU, and the terms it takes.
struct Room {
  std::vector<MemoryTerm> extras;  // resident beside the checkpoint shards
  int64_t resident = 0, comm = 0, nvls = 0, activation = 0;
  double weight_room = 0, kv_room = 0;
};

// Everything a Room depends on besides the memory rule, fixed for one plan.
struct RoomInputs {
  const ModelCard* card;
  const ParallelLayout* layout;
  const DeviceMemory* device;
  const EngineProfile* prof;
  const Resolved* resolved;
  const MemoryPlan* plan;                // weights and mem_fraction
  const std::vector<MemoryTerm>* draft;  // the speculative draft's term, if any
};

// "12.34": bytes in GiB for messages.
std::string Gib(double bytes);
// NCCL communicators and custom all-reduce buffers (SGLang) or vLLM's
// non-torch memory, per GPU.
int64_t CommunicatorBytes(const EngineMemoryRule& m, int tp);
// What the engine keeps resident beside the checkpoint shards.
std::vector<MemoryTerm> ResidentExtras(const ModelCard& c, const ParallelLayout& l,
                                       const WeightBreakdown& w, const EngineProfile& prof,
                                       const EngineMemoryRule& m);
// Each component's weights as the kernel the engine runs for them keeps them
// (models/memory_plan_resident.cc); `architecture` "" takes the kernels every
// architecture shares.
Result<std::vector<ResidentComponent>> ResidentWeights(const ModelCard& c, const ParallelLayout& l,
                                                       const WeightBreakdown& w,
                                                       const EngineProfile& prof,
                                                       const std::string& architecture);
// The kernel_layout_bytes term (resident - shipped over the components with a
// rule); bytes 0 when no rule changes a byte.
MemoryTerm KernelLayoutTerm(const std::vector<ResidentComponent>& r);
// vLLM's activation peak of the profile run over `tokens` tokens.
int64_t VllmActivationBytes(const ModelCard& c, const ParallelLayout& l, const EngineProfile& prof,
                            const EngineMemoryRule& m, int64_t tokens);

Room ComputeRoom(const RoomInputs& in, const EngineMemoryRule& m);
// Whole KV pages one rank holds in `kv_room` bytes, less the pages the
// engine keeps back; 0 when not even one page fits.
int64_t PoolPages(double kv_room, int64_t bytes_per_page, int64_t reserved_pages);
void AddRoomTerms(const RoomInputs& in, const Room& x, MemoryPlan* p);
void FillPool(int64_t tokens_per_rank, int64_t bytes_per_token, int64_t page, MemoryPlan* p);
void AddPoolAndReserve(const EngineMemoryRule& m, MemoryPlan* p);
void AddKvRange(const RoomInputs& in, const std::function<int64_t(double)>& tokens_of,
                MemoryPlan* p);
Result<std::vector<MemoryTerm>> DraftTerms(const ModelCard& card, const ParallelLayout& layout,
                                           const PrecisionChoice& choice,
                                           const EngineMemoryOptions& opt, int64_t* bytes_per_token,
                                           MemoryPlan* p);
Status PlanHybrid(const HybridPoolInputs& hin, const RoomInputs& in, const Room& room,
                  MemoryPlan* p);

}  // namespace capplan::models::memory_plan_internal

#endif  // CAPPLAN_MODELS_MEMORY_PLAN_INTERNAL_H_
