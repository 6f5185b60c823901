// One attention rank's paged KV pool. Pages hold `page_size` tokens; a
// request holds ceil(tokens / page_size) pages. The pool only counts pages:
// which physical page a request gets does not change any simulated cost.
// Every allocation must be matched by a free; the simulator checks at the end
// of a run that the pool is full again (conservation).
#ifndef CAPPLAN_SIM_KV_POOL_H_
#define CAPPLAN_SIM_KV_POOL_H_

#include <bit>
#include <cstdint>

namespace capplan::sim {

class KvPool {
 public:
  KvPool() = default;
  KvPool(int64_t capacity_tokens, int64_t page_size)
      : page_size_(page_size),
        page_shift_(page_size > 0 && std::has_single_bit(static_cast<uint64_t>(page_size))
                        ? std::countr_zero(static_cast<uint64_t>(page_size))
                        : -1),
        total_pages_(capacity_tokens / page_size),
        free_pages_(total_pages_) {}

  int64_t page_size() const { return page_size_; }
  int64_t total_pages() const { return total_pages_; }
  int64_t free_pages() const { return free_pages_; }
  int64_t used_pages() const { return total_pages_ - free_pages_; }
  int64_t capacity_tokens() const { return total_pages_ * page_size_; }
  int64_t peak_used_pages() const { return peak_used_; }
  // Pages needed to hold `tokens` tokens.
  // Pages are a power of two in every engine: a shift, not a division, on
  // the simulator's hottest path.
  int64_t PagesFor(int64_t tokens) const {
    const int64_t t = tokens + page_size_ - 1;
    return page_shift_ >= 0 && t >= 0 ? t >> page_shift_ : t / page_size_;
  }

  // False (and nothing allocated) when fewer than n pages are free.
  bool Allocate(int64_t n) {
    if (n > free_pages_) return false;
    free_pages_ -= n;
    if (used_pages() > peak_used_) peak_used_ = used_pages();
    return true;
  }
  // The pool held `used` pages at a moment its allocations were counted
  // later (a fast-forward's folded step end): its peak takes them.
  void NotePeak(int64_t used) {
    if (used > peak_used_) peak_used_ = used;
  }
  // Returns n pages. Freeing more than was allocated is an accounting bug
  // the caller's conservation check reports (free_pages() > total_pages()).
  void Free(int64_t n) { free_pages_ += n; }

 private:
  int64_t page_size_ = 1;
  int page_shift_ = 0;  // log2(page_size_), or -1 when not a power of two
  int64_t total_pages_ = 0;
  int64_t free_pages_ = 0;
  int64_t peak_used_ = 0;
};

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_KV_POOL_H_
