// Paged KV cache layout, page tags, and the CPU references of the two
// kernels that touch a whole page table: KV append and integrity verify.
//
// Layout ("NHD" per page, as FlashInfer's paged cache,
// https://flashinfer.ai/2024/02/02/introduce-flashinfer.html):
//   K[page][slot][kv_head][k_dim], V[page][slot][kv_head][v_dim]
// For MLA there is one "KV head" whose K row is latent(512) + rope(64) = 576
// and V is the first 512 elements of the same row (absorbed form), so no V
// array exists (v_dim == 0 in the layout).
// Elements are BF16 (2 B) or FP8 E4M3 (1 B) with per-tensor (per-layer)
// scales k_scale / v_scale: stored code = Fp8(x / scale). That is the scale
// granularity FlashInfer's decode wrappers fold into the softmax scale
// (flashinfer-ai/flashinfer flashinfer/decode.py) and vLLM's default
// (vllm-project/vllm docs/features/quantization/quantized_kvcache.md).
// FlashMLA's 656-byte per-token layout (1x128 scales, BF16 rope) is NOT
// implemented here.
//
// Page tags (engine/page_tag.h): tags[physical_page] = (request, logical page,
// epoch), stamped by append, checked by the verify kernel as a separate
// launch before the decode step. Attention kernels never read tags. Physical
// page 0 is the poison page: never a valid target for a live entry.
//
// Bytes/FLOPs: append moves n_tokens * kv_heads * (k_dim + v_dim) * (2 in +
// elem out) bytes plus 16 B per token for the tag (one per token, idempotent);
// verify reads 4+4 B of page table + 16 B of tag per live page. Both are
// HBM-bound, aiming at >= 90% of the measured device-copy bandwidth.
#ifndef CAPPLAN_KERNELS_ATTENTION_PAGED_KV_H_
#define CAPPLAN_KERNELS_ATTENTION_PAGED_KV_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/formats/bf16.h"
#include "kernels/formats/hd.h"

namespace capplan::kernels {

enum class KvDtype : int { kBf16 = 0, kFp8 = 1 };
inline const char* KvDtypeName(KvDtype d) { return d == KvDtype::kFp8 ? "fp8" : "bf16"; }
inline int KvElemBytes(KvDtype d) { return d == KvDtype::kFp8 ? 1 : 2; }

// Same 16-byte layout as engine/page_tag.h's PageTag (request, logical page,
// epoch), kept here because kernels/ sits below engine/.
struct KvPageTag {
  int64_t request;
  int32_t logical_page;
  uint32_t epoch;
};
static_assert(sizeof(KvPageTag) == 16, "tag must stay 16 bytes (one load)");
inline constexpr int64_t kKvNoRequest = -1;
inline constexpr int32_t kKvPoisonPage = 0;

// A physical page a live entry may name: past the poison page and inside a
// pool of `num_pages` pages. Append (CPU and CUDA) writes only such pages;
// verify reads only their tags.
CAPPLAN_HD bool KvPageInPool(int32_t page, int num_pages) {
  return page > kKvPoisonPage && page < num_pages;
}

// The integrity rule the CPU reference and the verify kernel share: a live
// page-table entry (request, logical page, epoch) must point at a page in
// the pool (KvPageInPool) whose tag names exactly that. *found gets the tag
// read (no request, page -1, for a page out of the pool).
CAPPLAN_HD bool KvPageTagMatches(const KvPageTag* tags, int num_pages, int32_t page,
                                 int64_t request, int32_t logical_page, uint32_t epoch,
                                 KvPageTag* found) {
  *found = KvPageTag{kKvNoRequest, -1, 0};
  if (!KvPageInPool(page, num_pages)) return false;
  *found = tags[page];
  return found->request == request && found->logical_page == logical_page &&
         found->epoch == epoch;
}

struct PagedKvLayout {
  int num_pages = 0;  // physical pages, page 0 included (poison)
  int page_size = 16;
  int kv_heads = 1;
  int k_dim = 128;
  int v_dim = 128;  // 0: MLA, V aliases the first `mla_v_dim` of K
  KvDtype dtype = KvDtype::kBf16;

  size_t KElems() const { return static_cast<size_t>(num_pages) * page_size * kv_heads * k_dim; }
  size_t VElems() const { return static_cast<size_t>(num_pages) * page_size * kv_heads * v_dim; }
  size_t KOffset(int page, int slot, int head) const {
    return ((static_cast<size_t>(page) * page_size + slot) * kv_heads + head) * k_dim;
  }
  size_t VOffset(int page, int slot, int head) const {
    return ((static_cast<size_t>(page) * page_size + slot) * kv_heads + head) * v_dim;
  }
};

// Host copy of a cache: raw element bytes, so the same bytes can be copied
// to and from a device buffer.
struct HostPagedKv {
  PagedKvLayout layout;
  std::vector<uint8_t> k;       // KElems() * elem bytes
  std::vector<uint8_t> v;       // VElems() * elem bytes (empty for MLA)
  std::vector<KvPageTag> tags;  // num_pages
  float k_scale = 1.0f;
  float v_scale = 1.0f;
  // Allocates; K/V filled with NaN (BF16 0xffff / FP8 0xff), tags unowned.
  static HostPagedKv Make(const PagedKvLayout& l, float k_scale, float v_scale);
  float KAt(int page, int slot, int head, int d) const;
  float VAt(int page, int slot, int head, int d) const;  // MLA: from K
};

// A batch's page table. pages/epochs are [batch, max_pages]; entries past a
// request's last page are kKvPoisonPage.
struct PageTable {
  int batch = 0;
  int max_pages = 0;
  std::vector<int32_t> pages;
  std::vector<uint32_t> epochs;
  std::vector<int64_t> request_ids;  // [batch]
  std::vector<int32_t> seq_lens;     // [batch], tokens
  int32_t Page(int b, int j) const { return pages[static_cast<size_t>(b) * max_pages + j]; }
};

// Builds a page table for `seq_lens` whose physical pages are a random
// permutation of 1..total (page 0 stays poison), epochs random.
PageTable MakeRandomPageTable(const std::vector<int32_t>& seq_lens, int page_size, uint32_t seed,
                              int* num_pages_needed);

// New tokens to append: token i belongs to page-table row token_row[i] at
// position token_pos[i]. k_new [n, kv_heads, k_dim], v_new [n, kv_heads,
// v_dim] (null when v_dim == 0).
struct AppendBatch {
  int n_tokens = 0;
  const Bf16* k_new = nullptr;
  const Bf16* v_new = nullptr;
  const int32_t* token_row = nullptr;
  const int32_t* token_pos = nullptr;
};

// Writes each token's K/V into its page (quantising to FP8 with 1/scale when
// the cache is FP8) and stamps the page's tag. Invalid if a position is
// outside the row's page table or maps to the poison page.
Status AppendKvCpu(const AppendBatch& batch, const PageTable& pt, HostPagedKv* cache);

struct IntegrityMismatch {
  int32_t row = 0;
  int32_t logical_page = 0;
  int32_t physical_page = 0;
  KvPageTag found{};
};
struct IntegrityReport {
  int count = 0;                         // all mismatches, even past the cap
  std::vector<IntegrityMismatch> first;  // up to cap, in (row, page) order
};

// For every live page (j < ceil(seq_len / page_size)) of every row: the
// physical page must be in [1, num_pages) and its tag must equal
// (request_ids[row], j, epochs[row][j]).
IntegrityReport VerifyKvIntegrityCpu(const PageTable& pt, const std::vector<KvPageTag>& tags,
                                     int page_size, int cap);

std::string TagString(const KvPageTag& t);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_ATTENTION_PAGED_KV_H_
