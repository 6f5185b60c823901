// A rank's KV pages with its prefix cache: what the schedulers and the pool
// call instead of the bare KvPool when a prompt may start from cached
// blocks. With caching off (rank.cache null) each helper is the plain pool
// operation, so results without a cache do not change.
//
// Pages: free + held by requests + held by the cache = the pool's total.
// Cached pages nobody references count as available (SGLang counts
// evictable tree nodes as available too) and are evicted, least recently
// used first, only when an allocation needs them: a full pool gives up
// cache before it retracts a running request.
#ifndef CAPPLAN_SIM_RANK_CACHE_H_
#define CAPPLAN_SIM_RANK_CACHE_H_

#include <cstdint>

#include "sim/sim_state.h"

namespace capplan::sim {

// Free pages plus evictable cached pages.
int64_t AvailablePages(const RankState& rank);
// Allocates n pages, evicting cached pages when the free ones do not cover
// n; false (nothing allocated) when even that is not enough.
bool AllocatePages(RankState& rank, int64_t n);
// Prompt tokens of request idx found in the cache (a multiple of the cache's
// block size, never the whole prompt: the last token is always computed so
// that the step yields logits), on the GPU or, with a host tier, loadable
// from host memory (match->host_blocks; a host part shorter than the rank's
// host_load_min_tokens is dropped). Touches the matched path unless `touch`
// is false (PrefixCache::Lookup); locks nothing.
int64_t LookupPrefix(RankState& rank, const SchedulerEnv& env, int32_t idx,
                     prefix_cache::Match* match, bool touch = true);
// Pages a match's host part takes on the GPU when it is loaded back.
int64_t HostLoadPages(const RankState& rank, const prefix_cache::Match& match);
// Locks `match` for request r and marks its tokens as already in the KV
// cache, first loading its host part back (into pages allocated here: the
// caller checked HostLoadPages are available; the rank's step pays the
// transfer, RankState::loading_blocks). Returns the pages that stopped
// being available: the lock's and the load's.
int64_t LockPrefix(RankState& rank, ReqState& r, const prefix_cache::Match& match);
// The request leaves the rank. Finished requests (insert = true) hand their
// full blocks to the cache (those pages stay allocated, now the cache's);
// every other page of the request is freed; its lock is released. Blocks
// that are not `findable` (a finished request's own content, under
// SchedulerEnv::content_self_only) are cached unindexed.
void ReleaseRequestPages(RankState& rank, const SchedulerEnv& env, int32_t idx, bool insert,
                         bool findable = true);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_RANK_CACHE_H_
