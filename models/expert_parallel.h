// Expert parallelism across GPUs and nodes: what the MoE dispatch and
// combine move over NVLink and RDMA (DeepEP's message formats), and the
// busiest EP rank's share of the routed tokens (hot experts, EPLB).
//
// Traffic (uniform routing: a token's k experts are k distinct experts out
// of E; rank r holds experts [r E/ep, (r+1) E/ep); ranks are numbered node by
// node, so D = min(ep, layout.NvlinkGpus()) consecutive ranks share NVLink
// and the EP group spans N = ep / D NVLink domains). Per EP rank with T
// tokens, hit(s) = 1 - C(E-s, k) / C(E, k) is the chance a token routes to
// a given set of s experts:
//   low-latency (decode): one message per (token, chosen expert), no dedup;
//     dispatch 16 + h + 4 h/128 bytes (index header, FP8 values, FP32 scale
//     per 128), combine 2h (BF16). A destination in the NVLink domain is
//     reached over NVLink (P2P), any other over RDMA:
//       nvlink = T k (D-1)/ep * msg,  rdma = T k (ep-D)/ep * msg
//   normal (prefill): one copy per (token, destination) of
//     align16(h + 8 + 4 h/128 + 8k) bytes dispatched (FP8 values, source
//     meta, scales, top-k indices and weights), align16(2h + 8 + 4k)
//     combined; one RDMA copy per remote domain the token hits, then the
//     receiving GPU forwards over NVLink to each GPU of its domain the token
//     hits (it forwards for the N source ranks of its local index):
//       rdma = T (N-1) hit(E D/ep) * msg,  nvlink = T N (D-1) hit(E/ep) * msg
// Message layouts: github.com/deepseek-ai/DeepEP csrc/kernels/legacy/
// internode_ll.cu (num_bytes_per_msg, combine num_send_bytes) and
// internode.cu (get_num_bytes_per_token). Each GPU sends and receives
// these amounts; the busiest rank receives `hot_expert_factor` times the
// mean, which bounds the exchange, so both fabrics' bytes scale by it.
//
// Busiest rank: rows = f T_all k / ep and the distinct expert slots it
// touches, S (1 - (1 - k/(E+R))^(f T_all)) with S = (E + R) / ep slots per
// rank (R EPLB redundant experts over all ranks) and f the hot-expert
// factor: given, or computed from measured per-expert loads by EPLB's
// replicate-then-pack rule (github.com/deepseek-ai/EPLB eplb.py) when r > 0,
// by the contiguous placement otherwise.
#ifndef CAPPLAN_MODELS_EXPERT_PARALLEL_H_
#define CAPPLAN_MODELS_EXPERT_PARALLEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "hw/profile.h"
#include "models/all_to_all.h"
#include "models/card.h"
#include "models/engine_profile.h"
#include "models/ops.h"
#include "models/types.h"

namespace capplan::models {

const char* MoeAllToAllName(MoeAllToAll a);  // "collective", "deepep"
const char* DeepEpModeName(DeepEpMode m);    // "auto", "low_latency", "normal"

// DeepEP message sizes in bytes (see the header comment).
double LowLatencyDispatchBytes(int64_t hidden);
double LowLatencyCombineBytes(int64_t hidden);
double NormalDispatchBytes(int64_t hidden, int top_k);
double NormalCombineBytes(int64_t hidden, int top_k);

// The chance that a token's k distinct experts out of E include at least
// one of a given s: 1 - C(E-s, k) / C(E, k).
double TokenHitsExperts(int experts, int top_k, int s);

// The all-to-all a step runs: kCollective unless the layout uses DeepEP,
// then its mode (kAuto: normal when the step has prefill).
AllToAllMode ExchangeMode(const ParallelLayout& l, bool step_has_prefill);

// One dispatch (or combine) on the busiest rank when every EP rank holds
// `tokens_per_rank` tokens; `mode` is a DeepEP mode.
AllToAllTraffic DispatchTraffic(const ModelCard& card, const ParallelLayout& l,
                                double tokens_per_rank, AllToAllMode mode);
AllToAllTraffic CombineTraffic(const ModelCard& card, const ParallelLayout& l,
                               double tokens_per_rank, AllToAllMode mode);

// Applies the layout's expert parallelism to one step's op list (op ids of
// models/layer_program.h): DeepEP traffic on moe.dispatch and moe.combine,
// the busiest rank's rows and touched experts on moe.experts. Under DeepEP
// the layer program itself keeps the DP gather and scatter to the dense
// layers and gives the MoE layers' router and unsharded shared experts each
// rank's own tokens (SGLang's scattered MoE input). A balanced collective
// layout's ops are left as they are.
// BuildStepOps calls it, for the target and the draft model alike (the
// draft's MoE layer runs on the same EP ranks).
void ApplyExpertParallel(const ShardedModel& model, const BatchShape& batch,
                         std::vector<Op>* ops);

// The busiest rank's token-rows over the mean: the given factor, or the
// measured loads' under the layout's placement.
double HotExpertFactor(const ParallelLayout& l);
// max over ranks / mean of `load` (one entry per logical expert) placed on
// `ep` ranks: contiguously (the first E % ep ranks one expert more), or by
// EPLB with `redundant` > 0 redundant experts over all ranks.
double PlacementImbalance(const std::vector<double>& load, int ep, int redundant);

// The grouped GEMM of the busiest EP rank when `tokens` tokens (all ranks')
// route through the MoE layer.
struct ExpertRankLoad {
  double rows = 0;            // token-rows it computes
  double touched_experts = 0; // distinct expert slots whose weights it reads
};
ExpertRankLoad BusiestExpertRank(const ModelCard& card, const ParallelLayout& l, double tokens);

// Layout rules a card decides (expert_load size, redundant experts, DeepEP
// needs one EP rank per GPU). The message starts with the field it is about.
Status CheckExpertPlacement(const ModelCard& card, const ParallelLayout& l);
// How the engine version splits routed + redundant experts over the EP
// ranks (its profile's expert_parallel rule): (E + R) % ep == 0, or an
// uneven split without redundant experts where the version makes one. The
// message starts with the field and names the redundant count that fits.
Status CheckExpertSplit(const ModelCard& card, const ParallelLayout& l,
                        const EngineProfile& engine);
// Layout rules a hardware profile decides: nodes no larger than its NVLink
// domain, an NVLink domain across nodes only as large as the profile's, an
// RDMA figure when nodes talk over RDMA. The message starts with the field.
Status CheckFabric(const ParallelLayout& l, const hw::HardwareProfile& profile);

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_EXPERT_PARALLEL_H_
