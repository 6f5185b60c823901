// What an expert-parallel all-to-all (MoE dispatch or combine) moves, split
// by the fabric it crosses, as models/expert_parallel.h computes it and
// sim/cost_model.cc prices it.
#ifndef CAPPLAN_MODELS_ALL_TO_ALL_H_
#define CAPPLAN_MODELS_ALL_TO_ALL_H_

namespace capplan::models {

// How the engine runs the exchange. kCollective: a plain all-to-all priced
// by the profile's all_to_all collective on `message_bytes` (single-node
// EP without DeepEP). DeepEP's two kernel families: kLowLatency (decode:
// one message per token and chosen expert, pure RDMA or NVLink P2P) and
// kNormal (prefill: one copy per token and destination rank, forwarded over
// NVLink inside a node after one RDMA copy per destination node).
enum class AllToAllMode { kCollective, kLowLatency, kNormal };
const char* AllToAllModeName(AllToAllMode m);  // "collective", "low_latency", "normal"

// Bytes one GPU of the busiest EP rank moves in one invocation. DeepEP
// keeps NVLink and RDMA busy at once, so the slower of the two bounds it.
struct AllToAllTraffic {
  AllToAllMode mode = AllToAllMode::kCollective;
  double nvlink_bytes = 0;  // to or from GPUs of this GPU's NVLink domain
  double rdma_bytes = 0;    // to or from GPUs in other NVLink domains
};

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_ALL_TO_ALL_H_
