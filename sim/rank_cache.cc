#include "sim/rank_cache.h"

#include <algorithm>

#include "sim/request_table.h"

namespace capplan::sim {

int64_t AvailablePages(const RankState& rank) {
  return rank.pool.free_pages() + (rank.cache != nullptr ? rank.cache->evictable_pages() : 0);
}

bool AllocatePages(RankState& rank, int64_t n) {
  if (n > rank.pool.free_pages() && rank.cache != nullptr) {
    rank.pool.Free(rank.cache->Evict(n - rank.pool.free_pages()));
  }
  return rank.pool.Allocate(n);
}

int64_t LookupPrefix(RankState& rank, const SchedulerEnv& env, int32_t idx,
                     prefix_cache::Match* match, bool touch) {
  *match = prefix_cache::Match();
  if (rank.cache == nullptr) return 0;
  const ReqState& r = (*env.reqs)[idx];
  if (env.content_self_only && r.retractions == 0) return 0;
  const int64_t block = rank.cache->block_tokens();
  const int64_t max_blocks = (r.prompt_target - 1) / block;
  if (max_blocks <= 0) return 0;
  (*env.content)(idx, max_blocks, env.blocks);
  *match = rank.cache->Lookup(*env.blocks, max_blocks, touch);
  if (match->host_blocks > 0 && match->host_blocks * block < rank.host_load_min_tokens) {
    match->host_blocks = 0;
    match->host_node = prefix_cache::kRoot;
  }
  return (match->blocks + match->host_blocks) * block;
}

int64_t HostLoadPages(const RankState& rank, const prefix_cache::Match& match) {
  return rank.cache == nullptr ? 0 : match.host_blocks * rank.cache->PagesPerBlock();
}

int64_t LockPrefix(RankState& rank, ReqState& r, const prefix_cache::Match& hit) {
  if (rank.cache == nullptr) return 0;
  rank.prompt_tokens_admitted += r.prompt_target;
  if (hit.blocks + hit.host_blocks == 0) return 0;
  const int64_t before = AvailablePages(rank);
  prefix_cache::Match match = hit;
  rank.cache->Lock(match.node);
  if (match.host_blocks > 0) {
    // Loaded first and locked, the path cannot lose a node while pages are
    // found for it (making room evicts GPU leaves, and may drop host-only
    // ones for their copies). A load that no longer fits beside the lock
    // is left out: those tokens are computed.
    const int64_t pages = HostLoadPages(rank, match);
    if (AvailablePages(rank) >= pages) {
      const int32_t gpu_part = match.node;
      rank.loading_blocks += match.host_blocks;
      r.loading_kv = true;
      rank.host_hit_tokens += match.host_blocks * rank.cache->block_tokens();
      rank.cache->LoadBack(&match);
      rank.cache->Lock(match.node);
      rank.cache->Unlock(gpu_part);
      AllocatePages(rank, pages);
    }
  }
  r.cache_node = match.node;
  r.cached_tokens = match.blocks * rank.cache->block_tokens();
  r.prefilled = r.kv_tokens = r.cached_tokens;
  rank.kv_tokens += r.cached_tokens;
  rank.cache_hit_tokens += r.cached_tokens;
  return before - AvailablePages(rank);
}

void ReleaseRequestPages(RankState& rank, const SchedulerEnv& env, int32_t idx, bool insert,
                         bool findable) {
  ReqState& r = (*env.reqs)[idx];
  int64_t freed = r.pages;
  if (rank.cache != nullptr) {
    if (insert && !findable) {
      // The request's own full blocks: those past its matched prefix.
      const int64_t block = rank.cache->block_tokens();
      const int64_t own = r.kv_tokens / block - r.cached_tokens / block;
      const int64_t pages = std::min(r.pages, own * rank.cache->PagesPerBlock());
      rank.cache->InsertUnindexed(pages / rank.cache->PagesPerBlock());
      freed -= pages;
    } else if (insert) {
      const int64_t block = rank.cache->block_tokens();
      (*env.content)(idx, r.kv_tokens / block, env.blocks);
      const int64_t n = static_cast<int64_t>(env.blocks->size());
      // Blocks past the matched prefix were computed into the request's own
      // pages (block size is a multiple of the page size), so every new
      // node takes its pages from the request.
      const int64_t added = rank.cache->Insert(*env.blocks, n);
      freed -= std::min(r.pages, added * rank.cache->PagesPerBlock());
    }
    if (r.cache_node != prefix_cache::kRoot) {
      // The engine appends freed blocks to its LRU queue's tail, the
      // request's own blocks first, then its matched prefix: released, the
      // prefix becomes the newest (Insert touched it already).
      if (env.content_self_only && !(insert && findable)) rank.cache->Touch(r.cache_node);
      rank.cache->Unlock(r.cache_node);
    }
    if (env.content_self_only) {
      freed += rank.cache->ReleaseStaleUnindexed() * rank.cache->PagesPerBlock();
    }
  }
  rank.pool.Free(freed);
  rank.kv_tokens -= r.kv_tokens;
  r.pages = 0;
  r.kv_tokens = 0;
  r.cache_node = prefix_cache::kRoot;
  r.cached_tokens = 0;
}

}  // namespace capplan::sim
