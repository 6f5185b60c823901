// Which fabric a prompt's KV crosses between the prefill and the decode
// pool, and which GPUs send and receive it.
//
// Placement. Both pools sit in one NVLink domain when every GPU of both
// (gpus x replicas each) fits the profile's `nvlink_domain_gpus` (8 on an
// HGX baseboard, 72 in a GB200/GB300 NVL72 rack) and neither pool spans
// nodes over RDMA; the KV then moves GPU to GPU over NVLink. Otherwise it
// crosses the scale-out network: one RDMA NIC per GPU (`rdma_bytes_per_s`,
// a ConnectX-7 400G per GPU on HGX). `link` "auto" picks by that rule;
// "nvlink" or "rdma" set it by hand, and "nvlink" for pools that cannot
// share a domain is refused.
//
// Who sends what (SGLang's rank mapping, python/sglang/srt/disaggregation/
// common/conn.py `_resolve_rank_mapping`, github.com/sgl-project/sglang at
// 0094505d; Mooncake and NIXL move the bytes each rank registers). One
// request's KV sits on its prefill instance's P attention-TP ranks and must
// land on the D attention-TP ranks of the decode DP rank that owns it
// (P, D: attention TP, tp / dp under DP attention). Each decode rank
// receives its own layout's KV, B_d bytes per token:
//   P == D: rank i sends to rank i, B_d each.
//   D >  P: each prefill rank writes to D/P decode ranks: it sends
//           (D/P) B_d (MLA's latent is whole on every rank, so each copy is
//           the full latent; GQA's heads split, same sum).
//   D <  P: each decode rank pulls from P/D prefill ranks: GQA, B_d P/D
//           from each; MLA, the whole B_d from the first of them only.
// Each GPU has its own link, so the transfers run in parallel and the
// busiest link carries B_d max(1, D/P) bytes per token: that sets the time.
// A request moves D B_d bytes per token in all, over min(P, D) parallel
// links (MLA) or max(P, D) (GQA, where D < P spreads each receiver over P/D
// senders but its one inbound link still carries B_d).
//
// Napkin (DeepSeek-R1, FP8 MLA latent 576 B x 61 layers = 35,136 B/token
// on every rank, plus its FP8 scales): prefill TP8 -> decode DP attention
// (D = 1): one sender, one receiver; a 4,096-token prompt is 144 MB, 2.9 ms
// at 50 GB/s RDMA or 0.16 ms at 900 GB/s NVLink 5, of which layer-by-layer
// overlap leaves 1/61 exposed after the prefill ends.
#ifndef CAPPLAN_SIM_PD_KV_FABRIC_H_
#define CAPPLAN_SIM_PD_KV_FABRIC_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "hw/profile.h"
#include "models/types.h"

namespace capplan::sim::pd {

// One pool's instance layout and how many instances it runs.
struct PoolFabric {
  models::ParallelLayout layout;
  int replicas = 1;
  int Gpus() const { return layout.gpus * replicas; }
  // Its GPUs share one NVLink domain only if its nodes are joined by NVLink.
  bool OneDomain() const {
    return layout.nodes <= 1 || layout.node_link == models::NodeLink::kNvlink;
  }
};

struct KvRoute {
  std::string link;       // "nvlink" | "rdma"
  bool derived = false;   // chosen by "auto" from the placement
  std::string placement;  // why this link, one line
  int prefill_attention_tp = 1, decode_attention_tp = 1;
  // Per request: GPUs that send real KV, GPUs that receive it, and how many
  // decode ranks each sender writes to (the busiest link's multiple of B_d).
  int senders = 1, receivers = 1, fan_out = 1;
};

// The names `transfer.link` takes: auto | nvlink | rdma.
const std::vector<std::string>& KvLinkChoices();

// Errors start with the field under /pd they are about ("transfer/link: ...").
Result<KvRoute> RouteKv(const PoolFabric& prefill, const PoolFabric& decode, bool mla,
                        const std::string& link, const hw::HardwareProfile& profile);

}  // namespace capplan::sim::pd

#endif  // CAPPLAN_SIM_PD_KV_FABRIC_H_
