// The prices of step signatures with one prefill chunk (four words: decode
// requests, their bucketed context, the chunk's new and cached tokens),
// the usual mixed step, in one open-addressed array: a lookup reads one
// slot (rarely two) and then the price, where a node-based map reads its
// bucket, its node and the key's own allocation. A run's mixed steps
// repeat few signatures at a time, so a small direct-mapped array of the
// latest ones (in the L1/L2 cache) is looked at first.
#ifndef CAPPLAN_SIM_CHUNK_PRICE_TABLE_H_
#define CAPPLAN_SIM_CHUNK_PRICE_TABLE_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "sim/cost_model.h"

namespace capplan::sim {

class ChunkPriceTable {
 public:
  static constexpr size_t kWords = 4;

  static uint64_t Hash(const int64_t* key) {
    uint64_t h = 0;
    for (size_t i = 0; i < kWords; ++i) h = (h + static_cast<uint64_t>(key[i])) * 0x9E3779B97F4A7C15ull;
    return h;
  }
  // The price stored for `key` (every word >= 0), or null.
  const StepCost* Find(const int64_t* key) {
    const uint64_t h = Hash(key);
    Slot& latest = latest_[h >> (64 - kLatestBits)];
    if (std::equal(key, key + kWords, latest.key)) return latest.cost;
    if (slots_.empty()) return nullptr;
    for (size_t i = Index(h);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.key[0] < 0) return nullptr;
      if (std::equal(key, key + kWords, s.key)) {
        latest = s;
        return s.cost;
      }
    }
  }
  // Stores a price for a key not in the table; the reference stays valid
  // until Clear().
  const StepCost& Insert(const int64_t* key, const StepCost& cost) {
    if (2 * (size_ + 1) > slots_.size()) Grow();
    costs_.push_back(cost);
    Place(key, &costs_.back());
    Slot& latest = latest_[Hash(key) >> (64 - kLatestBits)];
    std::copy(key, key + kWords, latest.key);
    latest.cost = &costs_.back();
    ++size_;
    return costs_.back();
  }
  size_t size() const { return size_; }
  void Clear() {
    std::fill(latest_.begin(), latest_.end(), Slot());
    slots_.clear();
    costs_.clear();
    size_ = 0;
  }

 private:
  struct Slot {
    int64_t key[kWords] = {-1, -1, -1, -1};  // key[0] < 0: empty
    const StepCost* cost = nullptr;
  };

  size_t Index(uint64_t h) const { return static_cast<size_t>(h >> shift_); }
  void Place(const int64_t* key, const StepCost* cost) {
    size_t i = Index(Hash(key));
    while (slots_[i].key[0] >= 0) i = (i + 1) & (slots_.size() - 1);
    std::copy(key, key + kWords, slots_[i].key);
    slots_[i].cost = cost;
  }
  // Twice the slots (1,024 at first), at most half of them full.
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t n = old.empty() ? size_t{1} << 10 : 2 * old.size();
    slots_.assign(n, Slot());
    shift_ = 64 - std::countr_zero(n);
    for (const Slot& s : old) {
      if (s.key[0] >= 0) Place(s.key, s.cost);
    }
  }

  static constexpr int kLatestBits = 10;
  std::vector<Slot> latest_ = std::vector<Slot>(size_t{1} << kLatestBits);
  std::vector<Slot> slots_;
  std::deque<StepCost> costs_;  // never moves what it holds
  size_t size_ = 0;
  int shift_ = 64;
};

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_CHUNK_PRICE_TABLE_H_
