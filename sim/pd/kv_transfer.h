// The prompt's KV moving from the prefill pool to the decode pool.
//
// Bytes come from the models/ KV layout (sim/pd/README.md): every decode
// attention rank must receive the KV it will hold, i.e. its own layout's
// bytes per token (all layers, DSA indexer keys and FP8 scales included).
// When the pools' KV dtypes differ, the narrower side's bytes go on the wire:
// a BF16 prefill pool quantizes to FP8 before sending (the receiver could
// not use the BF16 bytes anyway), an FP8 prefill feeding a BF16 decode pool
// sends FP8 and the receiver widens. Ranks receive in parallel, each over its
// own link (one NIC per GPU on an HGX H200 box for RDMA; NVLink per GPU);
// which link, and how many decode ranks each prefill rank writes to, is the
// route (sim/pd/kv_fabric.h).
//
// Time = link latency + the busiest link's bytes / link bandwidth. With layer-by-layer
// overlap the prefill sends each layer's KV as soon as that layer is done,
// so only the last layer's share is exposed after the prefill ends
// (ExposedNs); a link shared with other prompts, or slower than the prefill,
// exposes more (sim/pd/sender_links.h).
#ifndef CAPPLAN_SIM_PD_KV_TRANSFER_H_
#define CAPPLAN_SIM_PD_KV_TRANSFER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "hw/profile.h"
#include "models/card.h"
#include "models/types.h"
#include "sim/pd/kv_fabric.h"

namespace capplan::sim::pd {

struct KvTransferSpec {
  // One of KvLinkChoices(): "auto" derives the link from where the pools
  // sit (sim/pd/kv_fabric.h); "nvlink" or "rdma" sets it by hand.
  std::string link = "auto";
  bool layerwise_overlap = true;
};
// The links a transfer can use: nvlink (same NVLink domain) | rdma (between
// domains), each with its latency in sim/pd/link_defaults.json and its
// bandwidth in the hardware profile.
const std::vector<std::string>& KvLinkNames();

struct KvTransferPlan {
  std::string link;
  bool layerwise_overlap = true;
  models::Dtype src_dtype = models::Dtype::kBf16, dst_dtype = models::Dtype::kBf16;
  // Per decode attention rank, per prompt token.
  int64_t src_bytes_per_token = 0;   // in the prefill pool's dtype
  int64_t dst_bytes_per_token = 0;   // in the decode pool's dtype
  int64_t wire_bytes_per_token = 0;  // min of the two (see header)
  // On the busiest link: wire bytes x the route's fan-out.
  int64_t link_bytes_per_token = 0;
  KvRoute route;
  int num_layers = 1;
  double bandwidth_bytes_per_s = 0;
  double latency_s = 0;
  std::string latency_source;

  int64_t WireBytes(int64_t tokens) const { return tokens * wire_bytes_per_token; }
  int64_t LinkBytes(int64_t tokens) const { return tokens * link_bytes_per_token; }
  // Transfer time exposed after the prompt's prefill ends, the link to
  // itself (sim/pd/sender_links.h adds the wait for a shared one).
  int64_t ExposedNs(int64_t tokens) const;
  // The busiest link's time for the whole prompt, and for its last layer.
  int64_t WireNs(int64_t tokens) const;
  int64_t LastLayerNs(int64_t tokens) const;
};

// `decode` is the decode pool's layout: it decides which KV each receiving
// rank holds (GQA heads are sharded over attention TP, MLA latents are not).
// `route` (RouteKv) gives the link and the fan-out; without one, the spec's
// link is taken as set by hand with one sender per receiver.
Result<KvTransferPlan> PlanKvTransfer(const models::ModelCard& card,
                                      const models::ParallelLayout& decode, models::Dtype src,
                                      models::Dtype dst, const KvTransferSpec& spec,
                                      const hw::HardwareProfile& profile,
                                      const KvRoute* route = nullptr);

}  // namespace capplan::sim::pd

#endif  // CAPPLAN_SIM_PD_KV_TRANSFER_H_
