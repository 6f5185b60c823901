#include "sim/prefix_cache/prefix_cache.h"

#include <algorithm>
#include <cstdint>

namespace capplan::sim::prefix_cache {

PrefixCache::PrefixCache(int64_t block_tokens, int64_t page_size)
    : block_tokens_(block_tokens), pages_per_block_((block_tokens + page_size - 1) / page_size) {
  nodes_.push_back(Node{.live = true});  // the root holds no pages
}

// Path locking keeps every ancestor of a referenced node referenced, so an
// unreferenced node's whole subtree is unreferenced: all of them can go.
int64_t PrefixCache::evictable_pages() const {
  return (unreferenced_nodes_ + unindexed_blocks_) * pages_per_block_;
}

// Only a candidate's set entry moves with its last use; an interior node
// (most of a long path) just takes the new time.
void PrefixCache::Touch(int32_t node) {
  for (int32_t n = node; n != kRoot; n = nodes_[n].parent) {
    Node& x = nodes_[n];
    if (x.candidate) {
      candidates_.erase({x.last_use, n});
      x.candidate = false;
    }
    x.last_use = ++clock_;
    UpdateCandidate(n);
  }
}

void PrefixCache::UpdateCandidate(int32_t node) {
  Node& n = nodes_[node];
  const bool eligible = node != kRoot && n.live && n.refs == 0 && n.children == 0;
  if (eligible == n.candidate) return;
  n.candidate = eligible;
  if (eligible) {
    candidates_.insert({n.last_use, node});
  } else {
    candidates_.erase({n.last_use, node});
  }
}

Match PrefixCache::Lookup(std::span<const int64_t> blocks, int64_t max_blocks, bool touch) {
  Match m;
  const int64_t limit = std::min<int64_t>(max_blocks, static_cast<int64_t>(blocks.size()));
  while (m.blocks < limit) {
    auto it = child_.find({m.node, blocks[m.blocks]});
    if (it == child_.end()) break;
    m.node = it->second;
    ++m.blocks;
  }
  if (touch) Touch(m.node);
  return m;
}

int64_t PrefixCache::MatchLength(std::span<const int64_t> blocks) const {
  int32_t node = kRoot;
  int64_t n = 0;
  for (int64_t b : blocks) {
    auto it = child_.find({node, b});
    if (it == child_.end()) break;
    node = it->second;
    ++n;
  }
  return n;
}

void PrefixCache::Lock(int32_t node) {
  for (int32_t n = node; n != kRoot; n = nodes_[n].parent) {
    if (nodes_[n].refs++ == 0) --unreferenced_nodes_;
    UpdateCandidate(n);
  }
}

void PrefixCache::Unlock(int32_t node) {
  for (int32_t n = node; n != kRoot; n = nodes_[n].parent) {
    if (--nodes_[n].refs == 0) ++unreferenced_nodes_;
    UpdateCandidate(n);
  }
}

int32_t PrefixCache::NewNode(int32_t parent, int64_t block) {
  int32_t id;
  if (!free_nodes_.empty()) {
    id = free_nodes_.back();
    free_nodes_.pop_back();
  } else {
    id = static_cast<int32_t>(nodes_.size());
    nodes_.emplace_back();
  }
  nodes_[id] = Node{.block = block, .parent = parent, .live = true};
  child_[{parent, block}] = id;
  if (nodes_[parent].children++ == 0) UpdateCandidate(parent);
  ++live_nodes_;
  ++unreferenced_nodes_;
  if (live_nodes_ > stats_.peak_cached_blocks) stats_.peak_cached_blocks = live_nodes_;
  return id;
}

int64_t PrefixCache::Insert(std::span<const int64_t> blocks, int64_t n) {
  int32_t node = kRoot;
  int64_t added = 0;
  const int64_t limit = std::min<int64_t>(n, static_cast<int64_t>(blocks.size()));
  for (int64_t i = 0; i < limit; ++i) {
    auto it = child_.find({node, blocks[i]});
    if (it != child_.end()) {
      node = it->second;
    } else {
      node = NewNode(node, blocks[i]);
      ++added;
    }
  }
  Touch(node);
  stats_.inserted_blocks += added;
  stats_.duplicate_blocks += limit - added;
  return added;
}

void PrefixCache::InsertUnindexed(int64_t blocks) {
  if (blocks <= 0) return;
  unindexed_.emplace_back(++clock_, blocks);
  unindexed_blocks_ += blocks;
  stats_.inserted_blocks += blocks;
  if (cached_blocks() > stats_.peak_cached_blocks) stats_.peak_cached_blocks = cached_blocks();
}

int64_t PrefixCache::ReleaseStaleUnindexed() {
  const uint64_t oldest = candidates_.empty() ? UINT64_MAX : candidates_.begin()->first;
  int64_t released = 0;
  while (!unindexed_.empty() && unindexed_.front().first < oldest) {
    released += unindexed_.front().second;
    unindexed_.pop_front();
  }
  unindexed_blocks_ -= released;
  return released;
}

int64_t PrefixCache::Evict(int64_t pages) {
  int64_t freed = 0;
  while (freed < pages && (!candidates_.empty() || !unindexed_.empty())) {
    if (!unindexed_.empty() &&
        (candidates_.empty() || unindexed_.front().first < candidates_.begin()->first)) {
      auto& [use, blocks] = unindexed_.front();
      const int64_t need = (pages - freed + pages_per_block_ - 1) / pages_per_block_;
      const int64_t take = std::min(need, blocks);
      blocks -= take;
      unindexed_blocks_ -= take;
      stats_.evicted_blocks += take;
      freed += take * pages_per_block_;
      if (blocks == 0) unindexed_.pop_front();
      continue;
    }
    const int32_t victim = candidates_.begin()->second;
    candidates_.erase(candidates_.begin());
    Node& v = nodes_[victim];
    v.candidate = false;
    child_.erase({v.parent, v.block});
    v.live = false;
    --live_nodes_;
    --unreferenced_nodes_;
    ++stats_.evicted_blocks;
    freed += pages_per_block_;
    free_nodes_.push_back(victim);
    if (--nodes_[v.parent].children == 0) UpdateCandidate(v.parent);
  }
  return freed;
}

std::vector<int64_t> PrefixCache::EvictionOrder() const {
  std::vector<int64_t> order;
  for (const auto& [use, node] : candidates_) order.push_back(nodes_[node].block);
  return order;
}

}  // namespace capplan::sim::prefix_cache
