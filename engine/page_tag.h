// Page tags: the side array that lets a verification pass prove every page a
// request reads is the page it wrote (the idea of SGLang's KV canary,
// https://github.com/sgl-project/sglang/pull/26805, with a per-page tag).
//
// A tag is 16 bytes per physical page, written by the KV-append path when the
// owner stamps the page and read by the verification batch. Against a 16-token
// BF16 page of 8 KV heads x d=128 (64 KiB) that is ~0.02% extra traffic
// (16 B / 64 KiB), which is why verification can be always-on.
#ifndef CAPPLAN_ENGINE_PAGE_TAG_H_
#define CAPPLAN_ENGINE_PAGE_TAG_H_

#include <cstdint>
#include <string>

namespace capplan::engine {

// Request ids handed to the engine are >= 0; tags of pages never stamped (and
// of the poison page) carry this instead, so they match no request.
inline constexpr int64_t kNoRequest = -1;

// Physical page 0 is reserved as the poison page (like the null block of
// vLLM's vllm/v1/core/block_pool.py): never allocated, its KV is NaN, and any
// padded page-table slot points at it, so a stray read is loud.
inline constexpr int32_t kPoisonPage = 0;

struct PageTag {
  int64_t request = kNoRequest;  // owner when stamped
  int32_t logical_page = -1;     // index in the owner's page table
  uint32_t epoch = 0;            // the page's incarnation when stamped
  bool operator==(const PageTag&) const = default;
};

// One page-table entry as the kernels see it: the physical page plus the
// epoch it had when allocated to this request. The epoch is bumped on every
// reuse, so a stale entry to a reused page can never match the new tag.
struct PageRef {
  int32_t physical = kPoisonPage;
  uint32_t epoch = 0;
  bool operator==(const PageRef&) const = default;
};

std::string TagToString(const PageTag& t);

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_PAGE_TAG_H_
