// The paged KV manager: physical pages, free list, per-request page tables,
// per-page epochs, and deferred reuse.
//
// Two views are kept apart on purpose. `owned` is the allocator's truth (which
// pages a request holds, used to free them); the page table is what the
// kernels read. A mapping bug corrupts the second; freeing by the first keeps
// a failed request's cleanup from releasing someone else's page.
#ifndef CAPPLAN_ENGINE_KV_PAGE_MANAGER_H_
#define CAPPLAN_ENGINE_KV_PAGE_MANAGER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "common/status.h"
#include "engine/page_tag.h"

namespace capplan::engine {

class KvPageManager {
 public:
  // `num_pages` includes the poison page 0, so num_pages - 1 are usable.
  // A non-zero `shuffle_seed` permutes the initial free list: outputs must
  // not change with it (the page-permutation oracle: any difference is a
  // page-mapping bug).
  KvPageManager(int32_t num_pages, int32_t page_size, uint64_t shuffle_seed = 0);

  int32_t page_size() const { return page_size_; }
  int32_t num_pages() const { return num_pages_; }
  int32_t usable_pages() const { return num_pages_ - 1; }
  // Pages ready for allocation now (excludes pages waiting for the fence).
  int32_t free_pages() const { return static_cast<int32_t>(free_.size()); }
  int32_t deferred_pages() const { return static_cast<int32_t>(deferred_.size()); }
  int32_t PagesFor(int64_t tokens) const;

  Status AddRequest(int64_t id);
  bool HasRequest(int64_t id) const { return requests_.count(id) != 0; }
  // Grows `id`'s page table until it covers `tokens` tokens. Invalid error
  // (nothing allocated) when the free list cannot cover the growth.
  Status Reserve(int64_t id, int64_t tokens);
  // Frees every page `id` owns and forgets it. Pages are not reusable until
  // EndStep(): a kernel of the current step may still read them
  // (freed-while-in-flight bugs: https://github.com/sgl-project/sglang/pull/18803,
  // https://github.com/vllm-project/vllm/pull/45357).
  // `not_owned` (optional) receives how many pages in its table the request
  // no longer owned (taken by a stale reuse), which stay allocated.
  Status Release(int64_t id, int32_t* not_owned = nullptr);
  // The step fence: deferred pages return to the free list.
  void EndStep();

  const std::vector<PageRef>& PageTable(int64_t id) const;
  uint32_t CurrentEpoch(int32_t physical) const { return epochs_[physical]; }
  // Who the allocator believes owns a physical page (kNoRequest if free).
  int64_t Owner(int32_t physical) const { return owner_[physical]; }
  std::vector<int64_t> Requests() const;

  // ---- Fault injection only (engine/fault_injector.h). Each reproduces one
  // class of real cross-request KV bug (fault_injector.h) on a running batch.
  // Points `id`'s logical page at `physical` without touching ownership.
  Status InjectRemap(int64_t id, int32_t logical_page, const PageRef& ref);
  // Takes `victim`'s page `logical_page` away while the victim's page table
  // still maps it (freed while in flight) and hands it to `thief` as its next
  // page, reusing the page WITHOUT bumping its epoch.
  Status InjectStaleReuse(int64_t victim, int32_t logical_page, int64_t thief);

 private:
  struct RequestPages {
    std::vector<PageRef> table;
    std::vector<int32_t> owned;
  };
  Result<int32_t> Allocate(int64_t owner);

  int32_t num_pages_;
  int32_t page_size_;
  std::deque<int32_t> free_;
  std::vector<int32_t> deferred_;
  std::vector<uint32_t> epochs_;
  std::vector<int64_t> owner_;
  std::map<int64_t, RequestPages> requests_;
};

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_KV_PAGE_MANAGER_H_
