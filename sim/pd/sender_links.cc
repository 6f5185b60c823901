#include "sim/pd/sender_links.h"

#include <algorithm>

namespace capplan::sim::pd {

int64_t SenderLinks::Send(int64_t sender, int64_t tokens, int64_t admit_ns, int64_t done_ns) {
  const int64_t wire = plan_.WireNs(tokens);
  const int64_t tail = plan_.layerwise_overlap ? plan_.LastLayerNs(tokens) : wire;
  int64_t& free = free_ns_[sender];
  const int64_t start = std::max(plan_.layerwise_overlap ? admit_ns : done_ns, free);
  free = start + wire;
  return plan_.ExposedNs(tokens) + std::max<int64_t>(0, free - (done_ns + tail));
}

}  // namespace capplan::sim::pd
