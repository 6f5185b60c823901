// CPU reference for paged attention (attention.h): plain loops in double,
// no tiling, no splits, so it is easy to trust.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/attention/attention.h"

namespace capplan::kernels {

Status AttentionProblem::Validate() const {
  if (rows < 0 || q_heads <= 0 || kv_heads <= 0 || q_heads % kv_heads != 0) {
    return Status::Invalid("attention: q_heads (" + std::to_string(q_heads) +
                           ") must be a positive multiple of kv_heads (" +
                           std::to_string(kv_heads) + ")");
  }
  if (k_dim <= 0 || v_dim <= 0 || (v_from_k && v_dim > k_dim)) {
    return Status::Invalid("attention: bad head dims k_dim=" + std::to_string(k_dim) +
                           " v_dim=" + std::to_string(v_dim));
  }
  if (page_size <= 0 || max_pages <= 0 || topk < 0) {
    return Status::Invalid("attention: page_size, max_pages must be positive, topk >= 0");
  }
  return Status::Ok();
}

Status PagedAttentionCpu(const AttentionProblem& p, const AttentionRows& r, const Bf16* q,
                         const HostPagedKv& cache, float* out) {
  CAPPLAN_RETURN_IF_ERROR(p.Validate());
  const int g = p.group();
  std::vector<double> s, acc(p.v_dim);
  std::vector<int> pos;
  for (int row = 0; row < p.rows; ++row) {
    const int seq = r.row_seq[row], ctx = r.row_ctx[row];
    pos.clear();
    if (p.topk > 0) {
      for (int t = 0; t < p.topk; ++t) {
        const int x = r.topk_idx[static_cast<size_t>(row) * p.topk + t];
        if (x >= 0 && x < ctx) pos.push_back(x);
      }
    } else {
      for (int t = 0; t < ctx; ++t) pos.push_back(t);
    }
    for (int h = 0; h < p.q_heads; ++h) {
      const int kvh = h / g;
      const Bf16* qh = q + (static_cast<size_t>(row) * p.q_heads + h) * p.k_dim;
      s.assign(pos.size(), 0.0);
      double m = -std::numeric_limits<double>::infinity();
      for (size_t t = 0; t < pos.size(); ++t) {
        const int page =
            r.page_table[static_cast<size_t>(seq) * p.max_pages + pos[t] / p.page_size];
        const int slot = pos[t] % p.page_size;
        double dot = 0;
        for (int d = 0; d < p.k_dim; ++d)
          dot += double(ToFloat(qh[d])) * cache.KAt(page, slot, kvh, d);
        s[t] = dot * p.sm_scale;
        m = std::max(m, s[t]);
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      double l = 0;
      for (size_t t = 0; t < pos.size(); ++t) {
        const int page =
            r.page_table[static_cast<size_t>(seq) * p.max_pages + pos[t] / p.page_size];
        const int slot = pos[t] % p.page_size;
        const double w = std::exp(s[t] - m);
        l += w;
        for (int d = 0; d < p.v_dim; ++d) acc[d] += w * cache.VAt(page, slot, kvh, d);
      }
      float* o = out + (static_cast<size_t>(row) * p.q_heads + h) * p.v_dim;
      for (int d = 0; d < p.v_dim; ++d) o[d] = l > 0 ? static_cast<float>(acc[d] / l) : 0.0f;
    }
  }
  return Status::Ok();
}

void MakePrefillRows(int seq, int start, int n, std::vector<int32_t>* row_seq,
                     std::vector<int32_t>* row_ctx) {
  for (int i = 0; i < n; ++i) {
    row_seq->push_back(seq);
    row_ctx->push_back(start + i + 1);
  }
}

double AttentionBytes(const AttentionProblem& p, const std::vector<int32_t>& row_ctx,
                      int distinct_kv_rows) {
  // KV is counted once per distinct page-table row (prefill rows of one
  // sequence share their prefix: the minimum traffic reads it once).
  const double elem = KvElemBytes(p.kv_dtype);
  const double per_token = p.kv_heads * (p.k_dim + (p.v_from_k ? 0 : p.v_dim)) * elem;
  double tokens = 0;
  if (distinct_kv_rows == static_cast<int>(row_ctx.size())) {
    for (int32_t c : row_ctx) tokens += p.topk > 0 ? std::min(c, p.topk) : c;
  } else {
    tokens = *std::max_element(row_ctx.begin(), row_ctx.end());
  }
  const double qo = static_cast<double>(row_ctx.size()) * p.q_heads * (p.k_dim + p.v_dim) * 2.0;
  const double table = tokens / p.page_size * 4.0;
  return tokens * per_token + qo + table;
}

double AttentionFlops(const AttentionProblem& p, const std::vector<int32_t>& row_ctx) {
  double f = 0;
  for (int32_t c : row_ctx) {
    const double n = p.topk > 0 ? std::min(c, p.topk) : c;
    f += 2.0 * n * p.q_heads * (p.k_dim + p.v_dim);
  }
  return f;
}

}  // namespace capplan::kernels
