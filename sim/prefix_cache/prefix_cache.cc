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
    if (x.host_candidate) {
      host_candidates_.erase({x.last_use, n});
      x.host_candidate = false;
    }
    x.last_use = ++clock_;
    UpdateCandidate(n);
  }
}

namespace {

// Puts (use, node) in or out of `set` as `eligible` says, `in` its flag.
void Enlist(std::set<std::pair<uint64_t, int32_t>>* set, bool* in, bool eligible, uint64_t use,
            int32_t node) {
  if (eligible == *in) return;
  *in = eligible;
  if (eligible) {
    set->insert({use, node});
  } else {
    set->erase({use, node});
  }
}

}  // namespace

void PrefixCache::UpdateCandidate(int32_t node) {
  Node& n = nodes_[node];
  const bool root = node == kRoot;
  Enlist(&candidates_, &n.candidate, !root && n.live && n.refs == 0 && n.gpu_children == 0,
         n.last_use, node);
  Enlist(&host_candidates_, &n.host_candidate, !root && n.host && !n.live && n.children == 0,
         n.last_use, node);
}

Match PrefixCache::Lookup(std::span<const int64_t> blocks, int64_t max_blocks, bool touch) {
  Match m;
  const int64_t limit = std::min<int64_t>(max_blocks, static_cast<int64_t>(blocks.size()));
  while (m.blocks < limit) {
    auto it = child_.find({m.node, blocks[m.blocks]});
    if (it == child_.end() || !nodes_[it->second].live) break;
    m.node = it->second;
    ++m.blocks;
  }
  // A use may copy blocks to the host, which may drop host-only leaves for
  // room: counted before the host part is walked, so that it is not one of
  // them.
  if (touch && host_policy_ == HostWritePolicy::kWriteThroughSelective && host_capacity_ > 0) {
    for (int32_t n = m.node; n != kRoot; n = nodes_[n].parent) Hit(n);
  }
  // The GPU part is prefix-closed: past it, only host-only nodes.
  m.host_node = m.node;
  while (host_capacity_ > 0 && m.blocks + m.host_blocks < limit) {
    auto it = child_.find({m.host_node, blocks[m.blocks + m.host_blocks]});
    if (it == child_.end()) break;
    m.host_node = it->second;
    ++m.host_blocks;
  }
  if (m.host_blocks == 0) m.host_node = kRoot;
  const int32_t deepest = m.host_blocks > 0 ? m.host_node : m.node;
  if (touch) Touch(deepest);
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
  ++nodes_[parent].children;
  if (nodes_[parent].gpu_children++ == 0 || nodes_[parent].children == 1) UpdateCandidate(parent);
  ++live_nodes_;
  ++unreferenced_nodes_;
  if (live_nodes_ > stats_.peak_cached_blocks) stats_.peak_cached_blocks = live_nodes_;
  return id;
}

int64_t PrefixCache::Insert(std::span<const int64_t> blocks, int64_t n) {
  int32_t node = kRoot;
  int64_t added = 0;
  const int64_t limit = std::min<int64_t>(n, static_cast<int64_t>(blocks.size()));
  const bool write_through = host_capacity_ > 0 && host_policy_ == HostWritePolicy::kWriteThrough;
  for (int64_t i = 0; i < limit; ++i) {
    auto it = child_.find({node, blocks[i]});
    if (it != child_.end() && nodes_[it->second].live) {
      node = it->second;
      Hit(node);
      continue;
    }
    if (it != child_.end()) {
      // On the host only: the request computed the block again, and its
      // pages bring the node back to the GPU.
      node = it->second;
      Node& x = nodes_[node];
      x.live = true;
      ++live_nodes_;
      ++unreferenced_nodes_;
      ++nodes_[x.parent].gpu_children;
      UpdateCandidate(x.parent);
      UpdateCandidate(node);
      if (live_nodes_ > stats_.peak_cached_blocks) stats_.peak_cached_blocks = live_nodes_;
    } else {
      node = NewNode(node, blocks[i]);
    }
    ++added;
    if (write_through) BackUp(node);
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
    EvictGpuLeaf(candidates_.begin()->second);
    ++stats_.evicted_blocks;
    freed += pages_per_block_;
  }
  return freed;
}

void PrefixCache::EvictGpuLeaf(int32_t victim) {
  Node& v = nodes_[victim];
  // A node with host-only children must keep a copy, or they would leave
  // the tree unreachable; write-back copies every block it evicts.
  const bool keep = host_capacity_ > 0 && (v.children > v.gpu_children ||
                                           host_policy_ == HostWritePolicy::kWriteBack);
  if (keep) BackUp(victim);
  if (!nodes_[victim].host) {
    RemoveNode(victim);
    return;
  }
  Node& x = nodes_[victim];
  x.live = false;
  --live_nodes_;
  --unreferenced_nodes_;
  --nodes_[x.parent].gpu_children;
  UpdateCandidate(x.parent);
  UpdateCandidate(victim);
}

void PrefixCache::RemoveNode(int32_t node) {
  Node& v = nodes_[node];
  if (v.candidate) candidates_.erase({v.last_use, node});
  if (v.host_candidate) host_candidates_.erase({v.last_use, node});
  child_.erase({v.parent, v.block});
  Node& parent = nodes_[v.parent];
  --parent.children;
  if (v.live) {
    --live_nodes_;
    --unreferenced_nodes_;
    --parent.gpu_children;
  }
  if (v.host) --host_blocks_;
  const int32_t up = v.parent;
  v = Node();
  free_nodes_.push_back(node);
  UpdateCandidate(up);
}

bool PrefixCache::BackUp(int32_t node) {
  if (nodes_[node].host) return true;
  while (host_blocks_ >= host_capacity_ && !host_candidates_.empty()) {
    RemoveNode(host_candidates_.begin()->second);
    ++stats_.host_evicted_blocks;
  }
  if (host_blocks_ >= host_capacity_) return false;
  nodes_[node].host = true;
  ++host_blocks_;
  ++stats_.host_written_blocks;
  stats_.peak_host_blocks = std::max(stats_.peak_host_blocks, host_blocks_);
  return true;
}

void PrefixCache::Hit(int32_t node) {
  if (host_capacity_ == 0 || host_policy_ != HostWritePolicy::kWriteThroughSelective) return;
  if (++nodes_[node].hits >= 2) BackUp(node);
}

void PrefixCache::EnableHostTier(int64_t capacity, HostWritePolicy policy) {
  host_capacity_ = std::max<int64_t>(1, capacity);
  host_policy_ = policy;
}

int64_t PrefixCache::LoadBack(Match* m) {
  if (m->host_blocks == 0) return 0;
  std::vector<int32_t> path;
  for (int32_t n = m->host_node; n != m->node; n = nodes_[n].parent) path.push_back(n);
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    Node& x = nodes_[*it];
    x.live = true;
    ++live_nodes_;
    ++unreferenced_nodes_;
    ++nodes_[x.parent].gpu_children;
    UpdateCandidate(x.parent);
    UpdateCandidate(*it);
  }
  if (live_nodes_ > stats_.peak_cached_blocks) stats_.peak_cached_blocks = live_nodes_;
  const int64_t loaded = m->host_blocks;
  stats_.host_loaded_blocks += loaded;
  m->node = m->host_node;
  m->blocks += loaded;
  m->host_node = kRoot;
  m->host_blocks = 0;
  return loaded;
}

std::vector<int64_t> PrefixCache::HostOnlyBlocks() const {
  std::vector<int64_t> out;
  for (const Node& n : nodes_) {
    if (n.host && !n.live) out.push_back(n.block);
  }
  return out;
}

std::vector<int64_t> PrefixCache::EvictionOrder() const {
  std::vector<int64_t> order;
  for (const auto& [use, node] : candidates_) order.push_back(nodes_[node].block);
  return order;
}

}  // namespace capplan::sim::prefix_cache
