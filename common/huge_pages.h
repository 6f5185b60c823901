// Large buffers a run fills once (its request list, per-request metrics,
// the per-request slot table) are first touched page by page; on a virtual
// machine each 4 KiB page fault costs microseconds, which for a run of a
// million requests adds up to a sizeable share of the whole command. Backing
// such a buffer with transparent huge pages takes one fault per 2 MiB.
#ifndef CAPPLAN_COMMON_HUGE_PAGES_H_
#define CAPPLAN_COMMON_HUGE_PAGES_H_

#include <cstddef>
#include <vector>

namespace capplan::common {

// Asks the kernel to back the 2 MiB-aligned interior of [p, p + bytes) with
// huge pages when it is first touched. A hint: nothing happens where the
// kernel declines, has them off, or is not Linux; contents are unchanged.
void AdviseHugePages(const void* p, size_t bytes);

// Room for n elements in *v, advised as above before any is written (call
// it on a vector about to be filled: pages already touched stay as they are).
template <typename T>
void ReserveHugePages(std::vector<T>* v, size_t n) {
  v->reserve(n);
  AdviseHugePages(v->data(), v->capacity() * sizeof(T));
}

}  // namespace capplan::common

#endif  // CAPPLAN_COMMON_HUGE_PAGES_H_
