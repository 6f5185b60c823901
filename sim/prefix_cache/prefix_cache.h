// A prefix cache over content blocks, as an engine's KV pool keeps one:
// SGLang's radix cache (RadixCache, token- or page-granular) and vLLM's
// automatic prefix caching (a hash per full block) both reduce, for a
// simulator that knows prompts only as chains of content-block ids, to the
// same tree: a path from the root is a prefix, a node is one block of
// `block_tokens` tokens whose KV occupies `PagesPerBlock()` pages.
//
// Ownership: a node's pages belong to the cache. A request that matched a
// prefix locks the path to its deepest matched node (every node from there
// to the root gets +1 reference, as SGLang's inc_lock_ref does), so none of
// it can be evicted while the request runs. When the request finishes, the
// caller inserts the request's full blocks: blocks the cache lacked become
// nodes and their pages pass from the request to the cache; blocks already
// cached are duplicates, whose pages the caller frees.
//
// Eviction is LRU over unreferenced leaves (a node becomes a leaf when its
// last child is evicted, and is then a candidate in turn). "Recently used"
// is an access counter, not simulated time, so that two touches in the
// same nanosecond still have an order; ties cannot occur.
//
// The cache counts pages only; the KV pool it lives in (sim/kv_pool.h) is
// the caller's. Conservation: pages in the cache + pages held by requests +
// free pages = the pool's total, at every instant.
//
// A host tier (EnableHostTier; SGLang's HiCache host pool) keeps copies of
// blocks in host memory, `host_capacity` blocks at most. A block gets its
// copy by the write policy: at insertion (write-through), at its second use
// (write-through-selective), or when evicted from the GPU (write-back). A
// GPU eviction of a block with a copy leaves it in the tree, on the host
// only; one without a copy leaves the tree as before. The blocks on the GPU
// stay a prefix-closed set (only GPU leaves are evicted, a load brings a
// whole path back), so a lookup's match is a GPU part followed by a host
// part, which LoadBack brings to the GPU (the caller allocates its pages
// and pays the transfer). The host evicts least recently used host-only
// leaves to make room for a copy; they leave the tree.
#ifndef CAPPLAN_SIM_PREFIX_CACHE_PREFIX_CACHE_H_
#define CAPPLAN_SIM_PREFIX_CACHE_PREFIX_CACHE_H_

#include <cstdint>
#include <deque>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace capplan::sim::prefix_cache {

// The root: a match of zero blocks. Lock/Unlock on it are no-ops.
inline constexpr int32_t kRoot = 0;

struct Match {
  int32_t node = kRoot;  // deepest matched node on the GPU
  int64_t blocks = 0;    // blocks matched from the start, on the GPU
  // The match's continuation on the host tier only (none without one).
  int32_t host_node = kRoot;
  int64_t host_blocks = 0;
};

// When a block gets its host copy.
enum class HostWritePolicy : uint8_t { kWriteThrough, kWriteThroughSelective, kWriteBack };

struct Stats {
  int64_t inserted_blocks = 0;
  int64_t duplicate_blocks = 0;  // inserted but already cached
  int64_t evicted_blocks = 0;    // left the GPU (to the host tier or dropped)
  int64_t peak_cached_blocks = 0;
  // Host tier: copies written, blocks loaded back, copies evicted.
  int64_t host_written_blocks = 0;
  int64_t host_loaded_blocks = 0;
  int64_t host_evicted_blocks = 0;
  int64_t peak_host_blocks = 0;
};

class PrefixCache {
 public:
  // block_tokens >= 1, page_size >= 1 (checked by the caller's config parse).
  PrefixCache(int64_t block_tokens, int64_t page_size);

  int64_t block_tokens() const { return block_tokens_; }
  int64_t PagesPerBlock() const { return pages_per_block_; }
  int64_t cached_blocks() const { return live_nodes_ + unindexed_blocks_; }
  int64_t cached_pages() const { return cached_blocks() * pages_per_block_; }
  // Pages that Evict could free now (unreferenced nodes whose whole subtree
  // is unreferenced).
  int64_t evictable_pages() const;
  const Stats& stats() const { return stats_; }

  // The longest cached prefix of blocks[0, max_blocks). Touches the matched
  // path (it becomes most recently used) unless `touch` is false: a look
  // before the engine knows it will use the path (vLLM touches hit blocks
  // only once it allocates the request's blocks); Touch() marks the use.
  Match Lookup(std::span<const int64_t> blocks, int64_t max_blocks, bool touch = true);
  void Touch(int32_t node);
  // Blocks of the longest cached prefix of `blocks`, without touching it (a
  // router's look, not a use).
  int64_t MatchLength(std::span<const int64_t> blocks) const;
  // +1 / -1 reference on every node from `node` to the root.
  void Lock(int32_t node);
  void Unlock(int32_t node);

  // Inserts blocks[0, n). Returns how many were new: their pages now belong
  // to the cache; the other n - new were already cached (duplicates).
  int64_t Insert(std::span<const int64_t> blocks, int64_t n);
  // Caches `blocks` blocks that no lookup can match (a finished request's,
  // when every request's content is its own): the engine keeps them as it
  // keeps any freed block, so they take their LRU turn in eviction, but
  // they are held as one count per call, not as nodes.
  void InsertUnindexed(int64_t blocks);
  // Takes out the unindexed blocks older than every evictable node and
  // returns how many: eviction would take them before any node, so the
  // caller may hold them as free pages instead (the same order of use, and
  // a pool that stays free while nothing indexed is cached). Exact as long
  // as a node that becomes evictable later is touched first, as releases
  // under distinct content do.
  int64_t ReleaseStaleUnindexed();

  // Evicts least recently used unreferenced leaves until at least `pages`
  // pages are freed or nothing more is evictable. Returns pages freed.
  int64_t Evict(int64_t pages);

  // Evictable (LRU order, oldest first) block ids, for tests and traces.
  std::vector<int64_t> EvictionOrder() const;

  // Turns the host tier on (before any insertion): at most `capacity`
  // blocks (>= 1) in host memory, copied by `policy`.
  void EnableHostTier(int64_t capacity, HostWritePolicy policy);
  bool has_host_tier() const { return host_capacity_ > 0; }
  int64_t host_blocks() const { return host_blocks_; }
  // Brings m's host part to the GPU: its nodes hold GPU pages again (the
  // caller allocates PagesPerBlock() x m.host_blocks of them), and m covers
  // them. Returns the blocks loaded. m must be the last Lookup's, with no
  // insertion or eviction since (either may drop host-only nodes).
  int64_t LoadBack(Match* m);
  // Host-only blocks (in the tree, not on the GPU), for tests.
  std::vector<int64_t> HostOnlyBlocks() const;

 private:
  struct Node {
    int64_t block = 0;
    int32_t parent = -1;
    int32_t children = 0;       // in the tree
    int32_t gpu_children = 0;   // of them, live
    int32_t refs = 0;
    int32_t hits = 0;           // uses (write-through-selective)
    uint64_t last_use = 0;
    // In the tree (reachable by lookups) while live or host; a host-only
    // node is host and not live.
    bool live = false;  // holds GPU pages
    bool host = false;  // has a host copy
    bool candidate = false;  // in candidates_ (an unreferenced live GPU leaf)
    bool host_candidate = false;  // in host_candidates_ (a host-only leaf)
  };
  struct ChildKeyHash {
    size_t operator()(const std::pair<int32_t, int64_t>& k) const {
      const uint64_t h = static_cast<uint64_t>(k.second) * 0x9E3779B97F4A7C15ull;
      return static_cast<size_t>(h ^ (h >> 29) ^ static_cast<uint64_t>(k.first) * 0xBF58476D1CE4E5B9ull);
    }
  };

  void UpdateCandidate(int32_t node);
  int32_t NewNode(int32_t parent, int64_t block);
  // The GPU's least recently used leaf leaves the GPU: to the host tier
  // when it has (or, write-back, gets) a copy, else out of the tree.
  void EvictGpuLeaf(int32_t victim);
  // Takes node out of the tree (it has no children left).
  void RemoveNode(int32_t node);
  // A host copy for node, evicting host-only leaves for room; false when
  // the host tier holds nothing it could give up.
  bool BackUp(int32_t node);
  // A use of node (write-through-selective copies at the second).
  void Hit(int32_t node);

  int64_t block_tokens_;
  int64_t pages_per_block_;
  std::vector<Node> nodes_;
  std::vector<int32_t> free_nodes_;
  std::unordered_map<std::pair<int32_t, int64_t>, int32_t, ChildKeyHash> child_;  // (parent, block) -> node
  std::set<std::pair<uint64_t, int32_t>> candidates_;     // (last_use, node): evictable leaves
  std::set<std::pair<uint64_t, int32_t>> host_candidates_;  // (last_use, node): host-only leaves
  int64_t host_capacity_ = 0;  // 0: no host tier
  int64_t host_blocks_ = 0;    // nodes with a host copy
  HostWritePolicy host_policy_ = HostWritePolicy::kWriteThrough;
  int64_t live_nodes_ = 0;
  int64_t unreferenced_nodes_ = 0;
  std::deque<std::pair<uint64_t, int64_t>> unindexed_;  // (use, blocks), oldest first
  int64_t unindexed_blocks_ = 0;
  uint64_t clock_ = 0;
  Stats stats_;
};

}  // namespace capplan::sim::prefix_cache

#endif  // CAPPLAN_SIM_PREFIX_CACHE_PREFIX_CACHE_H_
