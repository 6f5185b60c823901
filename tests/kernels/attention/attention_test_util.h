// Shared builders for the attention tests (CPU and GPU): random paged caches
// filled through the append reference, and a dense float64 ground truth.
#ifndef CAPPLAN_TESTS_KERNELS_ATTENTION_ATTENTION_TEST_UTIL_H_
#define CAPPLAN_TESTS_KERNELS_ATTENTION_ATTENTION_TEST_UTIL_H_

#include <cmath>
#include <random>
#include <vector>

#include "kernels/attention/attention.h"
#include "kernels/attention/paged_kv.h"

namespace capplan::kernels::testing {

inline std::vector<Bf16> RandomBf16(size_t n, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, stddev);
  std::vector<Bf16> v(n);
  for (auto& x : v) x = ToBf16(d(rng));
  return v;
}

// A cache holding every token of `seq_lens`, written through AppendKvCpu
// from random BF16 K/V (returned in k_src/v_src as [row][pos][head][dim]).
struct Filled {
  PageTable pt;
  HostPagedKv cache;
  std::vector<std::vector<Bf16>> k_src, v_src;  // per row
};

inline Filled FillCache(const std::vector<int32_t>& seq_lens, const PagedKvLayout& shape,
                        float k_scale, float v_scale, uint32_t seed) {
  Filled f;
  int pages = 0;
  f.pt = MakeRandomPageTable(seq_lens, shape.page_size, seed, &pages);
  PagedKvLayout l = shape;
  l.num_pages = pages;
  f.cache = HostPagedKv::Make(l, k_scale, v_scale);
  for (int b = 0; b < f.pt.batch; ++b) {
    const int n = seq_lens[b];
    f.k_src.push_back(RandomBf16(static_cast<size_t>(n) * l.kv_heads * l.k_dim, seed * 31 + b));
    f.v_src.push_back(RandomBf16(static_cast<size_t>(n) * l.kv_heads * l.v_dim, seed * 37 + b));
    std::vector<int32_t> rows(n, b), pos(n);
    for (int i = 0; i < n; ++i) pos[i] = i;
    AppendBatch ab{n, f.k_src[b].data(), l.v_dim ? f.v_src[b].data() : nullptr, rows.data(),
                   pos.data()};
    Status st = AppendKvCpu(ab, f.pt, &f.cache);
    if (!st.ok()) std::abort();
  }
  return f;
}

// Dense float64 attention of one query head over explicit token lists.
inline std::vector<double> DenseAttention(const std::vector<double>& q,
                                          const std::vector<std::vector<double>>& k,
                                          const std::vector<std::vector<double>>& v, double scale) {
  std::vector<double> out(v.empty() ? 0 : v[0].size(), 0.0);
  if (k.empty()) return out;
  std::vector<double> s(k.size());
  double m = -INFINITY;
  for (size_t t = 0; t < k.size(); ++t) {
    double dot = 0;
    for (size_t d = 0; d < q.size(); ++d) dot += q[d] * k[t][d];
    s[t] = dot * scale;
    m = std::max(m, s[t]);
  }
  double l = 0;
  for (size_t t = 0; t < k.size(); ++t) {
    const double w = std::exp(s[t] - m);
    l += w;
    for (size_t d = 0; d < out.size(); ++d) out[d] += w * v[t][d];
  }
  for (auto& x : out) x /= l;
  return out;
}

}  // namespace capplan::kernels::testing

#endif  // CAPPLAN_TESTS_KERNELS_ATTENTION_ATTENTION_TEST_UTIL_H_
