// The prefill ranks' outgoing links as queues. Each prefill attention rank
// sends the KV of the prompts it computed over its own link (one NIC, or its
// NVLink port, per GPU: sim/pd/kv_fabric.h); prompts computed on one rank
// share that link, so a batch of prompts that finish together sends their
// bytes one after another.
//
// A prompt's bytes become sendable from its admission to the prefill pool
// on: with layer-by-layer overlap each chunk's layers are sent as they are
// computed, so its send may start at admission and, until the prompt is
// done, runs beside the computation; without overlap it starts when the
// prompt is done. The link is work-conserving (first come, first served, at
// full bandwidth): a send starts when the link has sent everything queued
// before it. The exposed time is the plan's (KvTransferPlan::ExposedNs)
// plus the delay of the send's end past the uncontended one (the prompt's
// end plus its last layer's share, or its whole wire time without overlap).
// With one prompt at a time, and a link no slower than the prefill, the
// delay is zero and the plan's exposed time stands.
//
// Not modelled: contention at the receiving decode ranks (several prefill
// ranks writing to one decode rank share its link).
#ifndef CAPPLAN_SIM_PD_SENDER_LINKS_H_
#define CAPPLAN_SIM_PD_SENDER_LINKS_H_

#include <cstdint>
#include <unordered_map>

#include "sim/pd/kv_transfer.h"

namespace capplan::sim::pd {

class SenderLinks {
 public:
  explicit SenderLinks(const KvTransferPlan& plan) : plan_(plan) {}
  // The exposed transfer time of a prompt of `tokens` tokens computed by
  // the prefill rank `sender` from `admit_ns` to `done_ns`; queues its send.
  int64_t Send(int64_t sender, int64_t tokens, int64_t admit_ns, int64_t done_ns);

 private:
  const KvTransferPlan& plan_;
  std::unordered_map<int64_t, int64_t> free_ns_;  // sender -> its link's next idle time
};

}  // namespace capplan::sim::pd

#endif  // CAPPLAN_SIM_PD_SENDER_LINKS_H_
