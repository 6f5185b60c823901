// What one pass over a rank's running batch found about the requests at
// its front, for the next passes over the same requests to skip them.
// ServingPool's fast-forward takes it as it brings every request up to a
// step end whose tokens it emitted (one replica of one rank); until the
// next step end, only requests finishing (they are not in it) and
// admissions (they join the back) change the batch, so the next
// schedule's DecodePagesNeeded and the next skip's SteadyIterations read
// only the requests admitted since. A step end in which no request decodes
// (a prefill step) leaves them as they were, its completed prompts joining
// the back; the pool marks it invalid at any other step end, and the skip
// spends it.
#ifndef CAPPLAN_SIM_BATCH_DIGEST_H_
#define CAPPLAN_SIM_BATCH_DIGEST_H_

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/sim_state.h"

namespace capplan::sim {

struct BatchDigest {
  bool valid = false;
  // The rank's retractions then: a retraction takes requests out of the
  // batch's middle, and one may come back at the same place.
  int64_t retractions = 0;
  std::vector<int32_t> ids;  // the requests, in batch order
  // SteadyIterations' sums: the least and the most output left but one,
  // and the requests that are not warm-up (ITL entries).
  int64_t first_last = INT64_MAX;
  int64_t last_last = 0;
  int64_t weight = 0;
  // When their last token came (the next skip's first step end enters
  // their gaps as one).
  int64_t last_ns = -1;
  // DecodePagesNeeded's: their contexts with the next token, summed, and
  // those at a page boundary (each takes one page to decode), in batch
  // order.
  int64_t ctx_sum = 0;
  std::vector<int32_t> growing;

  // How many requests at the front of the rank's batch it holds: all of
  // its own, or 0.
  size_t Covers(const RankState& rank) const {
    if (!valid || ids.empty() || rank.retractions != retractions ||
        rank.running.size() < ids.size() ||
        !std::equal(ids.begin(), ids.end(), rank.running.begin())) {
      return 0;
    }
    return ids.size();
  }
};

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_BATCH_DIGEST_H_
