#include <algorithm>
#include "sim/prefix_cache/prefix_cache.h"

#include <gtest/gtest.h>

#include <vector>

namespace capplan::sim::prefix_cache {
namespace {

using Blocks = std::vector<int64_t>;

TEST(PrefixCacheTest, PagesPerBlockRoundsUp) {
  EXPECT_EQ(PrefixCache(512, 1).PagesPerBlock(), 512);
  EXPECT_EQ(PrefixCache(512, 16).PagesPerBlock(), 32);
  EXPECT_EQ(PrefixCache(100, 16).PagesPerBlock(), 7);
}

TEST(PrefixCacheTest, EmptyCacheMatchesNothing) {
  PrefixCache c(4, 1);
  Blocks a{1, 2, 3};
  Match m = c.Lookup(a, 3);
  EXPECT_EQ(m.blocks, 0);
  EXPECT_EQ(m.node, kRoot);
}

TEST(PrefixCacheTest, InsertThenLongestPrefixMatch) {
  PrefixCache c(4, 1);
  Blocks a{1, 2, 3};
  EXPECT_EQ(c.Insert(a, 3), 3);
  EXPECT_EQ(c.cached_pages(), 12);
  Blocks b{1, 2, 9, 9};
  EXPECT_EQ(c.Lookup(b, 4).blocks, 2);
  // A limit below the cached length caps the match (an engine always
  // computes at least the last prompt token).
  EXPECT_EQ(c.Lookup(a, 2).blocks, 2);
  // Different first block: no match, even though later ids are equal.
  Blocks d{7, 2, 3};
  EXPECT_EQ(c.Lookup(d, 3).blocks, 0);
}

TEST(PrefixCacheTest, InsertCountsDuplicates) {
  PrefixCache c(4, 1);
  Blocks a{1, 2, 3};
  Blocks b{1, 2, 4, 5};
  EXPECT_EQ(c.Insert(a, 3), 3);
  EXPECT_EQ(c.Insert(b, 4), 2);  // 1, 2 already cached
  EXPECT_EQ(c.cached_blocks(), 5);
  EXPECT_EQ(c.stats().duplicate_blocks, 2);
  EXPECT_EQ(c.stats().inserted_blocks, 5);
}

TEST(PrefixCacheTest, EvictsLeastRecentlyUsedLeafFirst) {
  PrefixCache c(1, 1);
  Blocks a{1, 2};
  Blocks b{1, 3};
  Blocks d{4};
  c.Insert(a, 2);  // leaves: 2
  c.Insert(b, 2);  // leaves: 2, 3
  c.Insert(d, 1);  // leaves: 2, 3, 4
  EXPECT_EQ(c.EvictionOrder(), (Blocks{2, 3, 4}));
  Blocks a1{1, 2};
  c.Lookup(a1, 2);  // 2 (and its parent 1) become most recent
  EXPECT_EQ(c.EvictionOrder(), (Blocks{3, 4, 2}));
  EXPECT_EQ(c.Evict(1), 1);  // evicts 3
  EXPECT_EQ(c.EvictionOrder(), (Blocks{4, 2}));
  EXPECT_EQ(c.Evict(2), 2);  // 4, then 2; 1 is now a leaf
  EXPECT_EQ(c.EvictionOrder(), (Blocks{1}));
  EXPECT_EQ(c.cached_blocks(), 1);
  EXPECT_EQ(c.stats().evicted_blocks, 3);
}

// Unindexed blocks (a finished request's, when no lookup can match them)
// count as cached and evictable, and leave in their LRU turn among the
// indexed leaves: older unindexed blocks before a newer leaf, a newer
// group after an older leaf.
TEST(PrefixCacheTest, UnindexedBlocksTakeTheirLruTurn) {
  PrefixCache c(16, 16);
  c.InsertUnindexed(3);        // oldest
  Blocks a{7, 8};
  EXPECT_EQ(c.Insert(a, 2), 2);  // then a two-block path
  c.InsertUnindexed(2);        // newest
  EXPECT_EQ(c.cached_blocks(), 7);
  EXPECT_EQ(c.evictable_pages(), 7);
  EXPECT_EQ(c.Evict(2), 2);  // two of the oldest group
  EXPECT_EQ(c.Lookup(a, 2).blocks, 2);  // the path is intact (and now newest)
  EXPECT_EQ(c.Evict(2), 2);  // the last of the old group, then the newest group's first
  EXPECT_EQ(c.cached_blocks(), 3);
  EXPECT_EQ(c.Lookup(a, 2, /*touch=*/false).blocks, 2);
  EXPECT_EQ(c.Evict(1), 1);  // the rest of that group goes before the touched path
  EXPECT_EQ(c.Lookup(a, 2, /*touch=*/false).blocks, 2);
  EXPECT_EQ(c.Evict(1), 1);  // now the path's leaf
  EXPECT_EQ(c.Lookup(a, 2, /*touch=*/false).blocks, 1);
  EXPECT_EQ(c.stats().evicted_blocks, 6);
}

// Unindexed blocks older than every evictable node go first in any case:
// they can be released as free pages; newer ones stay cached.
TEST(PrefixCacheTest, StaleUnindexedBlocksAreReleased) {
  PrefixCache c(16, 16);
  c.InsertUnindexed(3);
  EXPECT_EQ(c.ReleaseStaleUnindexed(), 3);  // nothing indexed: all stale
  EXPECT_EQ(c.cached_blocks(), 0);
  c.InsertUnindexed(2);
  Blocks a{7};
  c.Insert(a, 1);
  c.InsertUnindexed(4);
  EXPECT_EQ(c.ReleaseStaleUnindexed(), 2);  // older than the leaf
  EXPECT_EQ(c.cached_blocks(), 5);
  EXPECT_EQ(c.evictable_pages(), 5);
  EXPECT_EQ(c.Evict(1), 1);  // the leaf, then the newer group
  EXPECT_EQ(c.ReleaseStaleUnindexed(), 4);
  EXPECT_EQ(c.cached_blocks(), 0);
}

TEST(PrefixCacheTest, LockedPathIsNeverEvicted) {
  PrefixCache c(2, 1);
  Blocks a{1, 2, 3};
  c.Insert(a, 3);
  Match m = c.Lookup(a, 2);  // locks 1 and 2, not 3
  c.Lock(m.node);
  EXPECT_EQ(c.evictable_pages(), 2);
  EXPECT_EQ(c.Evict(100), 2);  // only block 3
  EXPECT_EQ(c.cached_blocks(), 2);
  EXPECT_EQ(c.Evict(100), 0);
  c.Unlock(m.node);
  EXPECT_EQ(c.evictable_pages(), 4);
  EXPECT_EQ(c.Evict(100), 4);
  EXPECT_EQ(c.cached_blocks(), 0);
}

TEST(PrefixCacheTest, TwoLocksNeedTwoUnlocks) {
  PrefixCache c(1, 1);
  Blocks a{1};
  c.Insert(a, 1);
  Match m = c.Lookup(a, 1);
  c.Lock(m.node);
  c.Lock(m.node);
  c.Unlock(m.node);
  EXPECT_EQ(c.Evict(1), 0);
  c.Unlock(m.node);
  EXPECT_EQ(c.Evict(1), 1);
}

TEST(PrefixCacheTest, EvictedBlocksCanBeInsertedAgain) {
  PrefixCache c(1, 1);
  Blocks a{1, 2};
  c.Insert(a, 2);
  EXPECT_EQ(c.Evict(2), 2);
  EXPECT_EQ(c.Lookup(a, 2).blocks, 0);
  EXPECT_EQ(c.Insert(a, 2), 2);
  EXPECT_EQ(c.Lookup(a, 2).blocks, 2);
  EXPECT_EQ(c.stats().peak_cached_blocks, 2);
}


// Write-back, a host tier of two blocks, one chain 1-2-3: the GPU evicts
// leaves first, each copied down as it goes (3, then 2); block 1 needs room
// the host makes by dropping its least recently used host-only leaf (3), so
// the cascade ends HBM -> host for 1 and 2 and HBM -> host -> drop for 3.
TEST(PrefixCacheHostTier, EvictionCascadesFromGpuToHostToDropped) {
  PrefixCache c(1, 1);
  c.EnableHostTier(2, HostWritePolicy::kWriteBack);
  Blocks a{1, 2, 3};
  c.Insert(a, 3);
  EXPECT_EQ(c.stats().host_written_blocks, 0);  // write-back: nothing yet
  EXPECT_EQ(c.Evict(3), 3);
  EXPECT_EQ(c.cached_blocks(), 0);
  EXPECT_EQ(c.host_blocks(), 2);
  EXPECT_EQ(c.stats().host_written_blocks, 3);
  EXPECT_EQ(c.stats().host_evicted_blocks, 1);
  std::vector<int64_t> host = c.HostOnlyBlocks();
  std::sort(host.begin(), host.end());
  EXPECT_EQ(host, (std::vector<int64_t>{1, 2}));
  // A lookup finds nothing on the GPU and two blocks on the host.
  Match m = c.Lookup(a, 3);
  EXPECT_EQ(m.blocks, 0);
  EXPECT_EQ(m.host_blocks, 2);
  EXPECT_EQ(c.LoadBack(&m), 2);
  EXPECT_EQ(m.blocks, 2);
  EXPECT_EQ(m.host_blocks, 0);
  EXPECT_EQ(c.cached_blocks(), 2);
  EXPECT_EQ(c.stats().host_loaded_blocks, 2);
  EXPECT_TRUE(c.HostOnlyBlocks().empty());
  // Loaded blocks keep their host copies: evicting them writes nothing.
  EXPECT_EQ(c.Evict(2), 2);
  EXPECT_EQ(c.stats().host_written_blocks, 3);
  EXPECT_EQ(c.Lookup(a, 3).host_blocks, 2);
}

// Write-through copies at insertion; a GPU eviction then moves the block to
// the host with no write, and without a host tier it would be gone.
TEST(PrefixCacheHostTier, WriteThroughCopiesAtInsertion) {
  PrefixCache c(1, 1);
  c.EnableHostTier(8, HostWritePolicy::kWriteThrough);
  Blocks a{1, 2};
  c.Insert(a, 2);
  EXPECT_EQ(c.stats().host_written_blocks, 2);
  EXPECT_EQ(c.Evict(2), 2);
  EXPECT_EQ(c.stats().host_written_blocks, 2);
  EXPECT_EQ(c.Lookup(a, 2).host_blocks, 2);
  PrefixCache off(1, 1);
  off.Insert(a, 2);
  EXPECT_EQ(off.Evict(2), 2);
  EXPECT_EQ(off.Lookup(a, 2).host_blocks, 0);
  EXPECT_EQ(off.Lookup(a, 2).blocks, 0);
}

// Write-through-selective copies a block at its second use only.
TEST(PrefixCacheHostTier, SelectiveCopiesAtTheSecondUse) {
  PrefixCache c(1, 1);
  c.EnableHostTier(8, HostWritePolicy::kWriteThroughSelective);
  Blocks a{1, 2};
  c.Insert(a, 2);
  EXPECT_EQ(c.stats().host_written_blocks, 0);
  c.Lookup(a, 2);  // first use
  EXPECT_EQ(c.stats().host_written_blocks, 0);
  c.Lookup(a, 2);  // second
  EXPECT_EQ(c.stats().host_written_blocks, 2);
}

// A block recomputed by a request while its node sits on the host only
// comes back to the GPU with the request's pages (counted as added).
TEST(PrefixCacheHostTier, InsertRevivesAHostOnlyNode) {
  PrefixCache c(1, 1);
  c.EnableHostTier(8, HostWritePolicy::kWriteThrough);
  Blocks a{1, 2};
  c.Insert(a, 2);
  c.Evict(1);  // block 2 to the host
  EXPECT_EQ(c.cached_blocks(), 1);
  EXPECT_EQ(c.Insert(a, 2), 1);
  EXPECT_EQ(c.cached_blocks(), 2);
  EXPECT_TRUE(c.HostOnlyBlocks().empty());
}


// A use that copies a block may drop a host-only leaf for room: the lookup
// that made the use never returns that leaf as its host part. Host of one
// block: 2 is copied at its second use, then leaves the GPU; a third use of
// 1 wants a copy, the host gives up 2 for it, and the match ends at 1.
TEST(PrefixCacheHostTier, AUseThatDropsTheHostPartIsNotMatchedThere) {
  PrefixCache c(1, 1);
  c.EnableHostTier(1, HostWritePolicy::kWriteThroughSelective);
  Blocks a{1, 2};
  c.Insert(a, 2);
  c.Lookup(a, 2);
  c.Lookup(a, 2);
  EXPECT_EQ(c.host_blocks(), 1);
  c.Lock(c.Lookup(a, 1).node);  // keeps 1 on the GPU
  EXPECT_EQ(c.Evict(1), 1);     // 2 to the host
  EXPECT_EQ(c.HostOnlyBlocks(), (std::vector<int64_t>{2}));
  const Match m = c.Lookup(a, 2);
  EXPECT_EQ(m.blocks, 1);
  EXPECT_EQ(m.host_blocks, 0);
  EXPECT_TRUE(c.HostOnlyBlocks().empty());
}

}  // namespace
}  // namespace capplan::sim::prefix_cache
