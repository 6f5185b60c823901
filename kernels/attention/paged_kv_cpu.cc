// CPU references for KV append and integrity verification (paged_kv.h).
#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "kernels/attention/paged_kv.h"
#include "kernels/formats/fp8.h"

namespace capplan::kernels {

namespace {

float Load(const std::vector<uint8_t>& buf, size_t elem, KvDtype dt) {
  if (dt == KvDtype::kFp8) return Fp8E4m3ToFloat(buf[elem]);
  uint16_t bits;
  std::memcpy(&bits, &buf[2 * elem], 2);
  return Bf16BitsToFloat(bits);
}

void Store(std::vector<uint8_t>* buf, size_t elem, KvDtype dt, Bf16 x, float inv_scale) {
  if (dt == KvDtype::kFp8) {
    (*buf)[elem] = FloatToFp8E4m3(ToFloat(x) * inv_scale);
  } else {
    std::memcpy(&(*buf)[2 * elem], &x.bits, 2);
  }
}

}  // namespace

HostPagedKv HostPagedKv::Make(const PagedKvLayout& l, float k_scale, float v_scale) {
  HostPagedKv c;
  c.layout = l;
  c.k.assign(l.KElems() * KvElemBytes(l.dtype), 0xff);
  c.v.assign(l.VElems() * KvElemBytes(l.dtype), 0xff);
  c.tags.assign(l.num_pages, KvPageTag{kKvNoRequest, -1, 0});
  c.k_scale = k_scale;
  c.v_scale = v_scale;
  return c;
}

float HostPagedKv::KAt(int page, int slot, int head, int d) const {
  return Load(k, layout.KOffset(page, slot, head) + d, layout.dtype) * k_scale;
}

float HostPagedKv::VAt(int page, int slot, int head, int d) const {
  if (layout.v_dim == 0)
    return Load(k, layout.KOffset(page, slot, head) + d, layout.dtype) * k_scale;
  return Load(v, layout.VOffset(page, slot, head) + d, layout.dtype) * v_scale;
}

PageTable MakeRandomPageTable(const std::vector<int32_t>& seq_lens, int page_size, uint32_t seed,
                              int* num_pages_needed) {
  PageTable pt;
  pt.batch = static_cast<int>(seq_lens.size());
  pt.seq_lens = seq_lens;
  int total = 0;
  for (int32_t s : seq_lens) {
    const int n = (s + page_size - 1) / page_size;
    pt.max_pages = std::max(pt.max_pages, n);
    total += n;
  }
  pt.max_pages = std::max(pt.max_pages, 1);
  std::vector<int32_t> phys(total);
  std::iota(phys.begin(), phys.end(), 1);
  std::mt19937 rng(seed);
  std::shuffle(phys.begin(), phys.end(), rng);
  pt.pages.assign(static_cast<size_t>(pt.batch) * pt.max_pages, kKvPoisonPage);
  pt.epochs.assign(pt.pages.size(), 0);
  pt.request_ids.resize(pt.batch);
  size_t next = 0;
  for (int b = 0; b < pt.batch; ++b) {
    pt.request_ids[b] = 1000 + 7 * b;
    const int n = (seq_lens[b] + page_size - 1) / page_size;
    for (int j = 0; j < n; ++j) {
      pt.pages[static_cast<size_t>(b) * pt.max_pages + j] = phys[next++];
      pt.epochs[static_cast<size_t>(b) * pt.max_pages + j] = rng() % 1000;
    }
  }
  if (num_pages_needed) *num_pages_needed = total + 1;
  return pt;
}

Status AppendKvCpu(const AppendBatch& batch, const PageTable& pt, HostPagedKv* cache) {
  const PagedKvLayout& l = cache->layout;
  const float inv_k = 1.0f / cache->k_scale, inv_v = 1.0f / cache->v_scale;
  for (int i = 0; i < batch.n_tokens; ++i) {
    const int row = batch.token_row[i], pos = batch.token_pos[i];
    if (row < 0 || row >= pt.batch || pos < 0 || pos / l.page_size >= pt.max_pages) {
      return Status::Invalid("AppendKvCpu: token " + std::to_string(i) + " (row " +
                             std::to_string(row) + ", position " + std::to_string(pos) +
                             ") is outside the page table");
    }
    const int lp = pos / l.page_size, slot = pos % l.page_size;
    const int page = pt.Page(row, lp);
    if (!KvPageInPool(page, l.num_pages)) {
      return Status::Invalid("AppendKvCpu: token " + std::to_string(i) +
                             " maps to invalid physical page " + std::to_string(page));
    }
    for (int h = 0; h < l.kv_heads; ++h) {
      for (int d = 0; d < l.k_dim; ++d) {
        Store(&cache->k, l.KOffset(page, slot, h) + d, l.dtype,
              batch.k_new[(static_cast<size_t>(i) * l.kv_heads + h) * l.k_dim + d], inv_k);
      }
      for (int d = 0; d < l.v_dim; ++d) {
        Store(&cache->v, l.VOffset(page, slot, h) + d, l.dtype,
              batch.v_new[(static_cast<size_t>(i) * l.kv_heads + h) * l.v_dim + d], inv_v);
      }
    }
    cache->tags[page] =
        KvPageTag{pt.request_ids[row], lp, pt.epochs[static_cast<size_t>(row) * pt.max_pages + lp]};
  }
  return Status::Ok();
}

IntegrityReport VerifyKvIntegrityCpu(const PageTable& pt, const std::vector<KvPageTag>& tags,
                                     int page_size, int cap) {
  IntegrityReport rep;
  const int num_pages = static_cast<int>(tags.size());
  for (int b = 0; b < pt.batch; ++b) {
    const int live = (pt.seq_lens[b] + page_size - 1) / page_size;
    for (int j = 0; j < live && j < pt.max_pages; ++j) {
      const size_t e = static_cast<size_t>(b) * pt.max_pages + j;
      const int32_t page = pt.pages[e];
      KvPageTag found;
      if (!KvPageTagMatches(tags.data(), num_pages, page, pt.request_ids[b], j, pt.epochs[e],
                            &found)) {
        if (static_cast<int>(rep.first.size()) < cap) rep.first.push_back({b, j, page, found});
        ++rep.count;
      }
    }
  }
  return rep;
}

std::string TagString(const KvPageTag& t) {
  return "(request " + std::to_string(t.request) + ", logical page " +
         std::to_string(t.logical_page) + ", epoch " + std::to_string(t.epoch) + ")";
}

}  // namespace capplan::kernels
