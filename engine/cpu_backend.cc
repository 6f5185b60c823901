#include "engine/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/formats/bf16.h"
#include "kernels/formats/fp8.h"
#include "engine/slice_math.h"
#include "kernels/gemm/gemm_cpu.h"

namespace capplan::engine {
namespace {

using slice_math::Gemm;
using slice_math::RmsNorm;
using kernels::RoundToBf16;

// Host memory the CPU backend will spend on float weights before refusing.
constexpr double kMaxCpuWeightFloats = 256.0 * 1024 * 1024;  // 1 GiB of floats

double SliceWeightFloats(const SliceConfig& c) {
  double per_layer = 0;
  const double h = c.hidden;
  if (c.attention == models::AttentionKind::kGqa) {
    per_layer += h * (2.0 * c.q_heads * c.head_dim + 2.0 * c.kv_heads * c.head_dim);
  } else {
    per_layer += h * (c.q_lora_rank + c.kv_lora_rank + c.qk_rope) +
                 c.q_lora_rank * 1.0 * c.q_heads * (c.qk_nope + c.qk_rope) +
                 c.q_heads * 1.0 * c.kv_lora_rank * (c.qk_nope + c.v_head_dim) +
                 h * c.q_heads * c.v_head_dim;
  }
  const double ffn = c.n_experts > 0
                         ? 3.0 * h * c.moe_intermediate * (c.n_experts + c.n_shared)
                         : 3.0 * h * c.dense_intermediate;
  return c.layers * (per_layer + ffn) + 2.0 * c.vocab * h;
}

}  // namespace

Result<std::unique_ptr<CpuBackend>> CpuBackend::Create(const SliceConfig& config,
                                                       int32_t num_pages, int32_t page_size) {
  const double floats = SliceWeightFloats(config);
  if (floats > kMaxCpuWeightFloats) {
    return Status::Invalid("CPU backend: " + config.Describe() + " needs ~" +
                           std::to_string(static_cast<int64_t>(floats * 4 / (1 << 20))) +
                           " MiB of float weights; use --cpu-dims small (or the CUDA backend)");
  }
  CAPPLAN_ASSIGN_OR_RETURN(SliceWeights w, MakeSliceWeights(config));
  return std::unique_ptr<CpuBackend>(new CpuBackend(config, std::move(w), num_pages, page_size));
}

CpuBackend::CpuBackend(SliceConfig config, SliceWeights weights, int32_t num_pages,
                       int32_t page_size)
    : config_(std::move(config)),
      w_(std::move(weights)),
      num_pages_(num_pages),
      page_size_(page_size),
      width_(config_.KvEntryWidth()) {
  const size_t page_floats = static_cast<size_t>(page_size_) * width_;
  for (int l = 0; l < config_.layers; ++l) {
    cache_.emplace_back(static_cast<size_t>(num_pages_) * page_floats, 0.0f);
    // The poison page: any read of it turns the output into NaN.
    std::fill(cache_.back().begin(), cache_.back().begin() + page_floats,
              std::numeric_limits<float>::quiet_NaN());
  }
}

float* CpuBackend::Slot(int layer, const PageRef& page, int64_t position) {
  return cache_[layer].data() +
         (static_cast<size_t>(page.physical) * page_size_ + position % page_size_) * width_;
}

const float* CpuBackend::Entry(int layer, const std::vector<PageRef>& pages,
                               int64_t position) const {
  const PageRef& page = pages[position / page_size_];
  return cache_[layer].data() +
         (static_cast<size_t>(page.physical) * page_size_ + position % page_size_) * width_;
}

Status CpuBackend::Forward(const std::vector<StepRequest>& batch, PageTags* tags,
                           std::vector<int32_t>* next_tokens) {
  const SliceConfig& c = config_;
  const int H = c.hidden;
  std::vector<Row> rows;
  for (size_t i = 0; i < batch.size(); ++i) {
    const StepRequest& r = batch[i];
    if (r.pages == nullptr ||
        static_cast<int64_t>(r.pages->size()) * page_size_ <
            r.start_position + static_cast<int64_t>(r.tokens.size())) {
      return Status::Internal("CPU backend: request " + std::to_string(r.request) +
                              " has no pages for its new tokens");
    }
    for (size_t t = 0; t < r.tokens.size(); ++t) {
      rows.push_back(Row{i, r.start_position + static_cast<int64_t>(t)});
    }
  }
  const int n = static_cast<int>(rows.size());
  marks_.Clear();
  op_times_ = {};
  marks_.Mark(models::OpClass::kElementwise);  // embedding gather
  std::vector<float> x(static_cast<size_t>(n) * H);
  {
    int k = 0;
    for (const StepRequest& r : batch) {
      for (int32_t tok : r.tokens) {
        if (tok < 0 || tok >= c.vocab) return Status::Internal("CPU backend: bad token id");
        std::copy_n(w_.embedding.data() + static_cast<size_t>(tok) * H, H, x.data() + k * H);
        ++k;
      }
    }
  }
  std::vector<float> h(x.size()), out;
  for (int l = 0; l < c.layers; ++l) {
    const SliceLayerWeights& L = w_.layers[l];
    marks_.Mark(models::OpClass::kElementwise);
    for (int i = 0; i < n; ++i) RmsNorm(&x[i * H], L.attn_norm, H, &h[i * H]);
    marks_.Mark(models::OpClass::kAttention);
    CAPPLAN_RETURN_IF_ERROR(Attention(l, batch, rows, h, tags, &out));
    marks_.Mark(models::OpClass::kElementwise);
    // On a TP rank o_proj yields a partial sum that an all-reduce completes;
    // the slice runs one rank, so the partial is the rank's output.
    for (size_t i = 0; i < x.size(); ++i) x[i] = RoundToBf16(x[i] + out[i]);
    for (int i = 0; i < n; ++i) RmsNorm(&x[i * H], L.ffn_norm, H, &h[i * H]);
    out.assign(x.size(), 0.0f);
    marks_.Mark(L.moe ? models::OpClass::kMoe : models::OpClass::kDenseGemm);
    if (n > 0) {
      if (L.moe) {
        CAPPLAN_RETURN_IF_ERROR(kernels::MoeForwardCpu(L.experts, L.router, h.data(), n,
                                                       out.data()));
      } else {
        CAPPLAN_RETURN_IF_ERROR(kernels::ExpertForwardCpu(L.dense, h.data(), n, out.data()));
      }
    }
    marks_.Mark(models::OpClass::kElementwise);
    for (size_t i = 0; i < x.size(); ++i) x[i] = RoundToBf16(x[i] + out[i]);
    if (probe_) probe_(l, x, H);
  }
  // Sample: the last new token of every request that wants one.
  next_tokens->assign(batch.size(), -1);
  logits_.clear();
  std::vector<float> last;
  std::vector<size_t> which;
  {
    int k = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      k += static_cast<int>(batch[i].tokens.size());
      if (!batch[i].want_token || batch[i].tokens.empty()) continue;
      last.resize(last.size() + H);
      RmsNorm(&x[(k - 1) * H], w_.final_norm, H, last.data() + last.size() - H);
      which.push_back(i);
    }
  }
  marks_.Mark(models::OpClass::kDenseGemm);  // LM head
  CAPPLAN_ASSIGN_OR_RETURN(std::vector<float> logits,
                           Gemm(w_.lm_head, last, static_cast<int>(which.size())));
  marks_.Mark(models::OpClass::kOverhead);  // greedy sampling
  for (size_t j = 0; j < which.size(); ++j) {
    const float* lg = logits.data() + j * c.vocab;
    logits_.emplace_back(lg, lg + c.vocab);
    int best = 0;
    // NaN (a poison-page read) never compares greater, so it yields token 0.
    for (int v = 1; v < c.vocab; ++v) {
      if (lg[v] > lg[best]) best = v;
    }
    (*next_tokens)[which[j]] = best;
  }
  op_times_ = marks_.Finish();
  return Status::Ok();
}

Status CpuBackend::Attention(int layer, const std::vector<StepRequest>& batch,
                             const std::vector<Row>& rows, const std::vector<float>& h,
                             PageTags* tags, std::vector<float>* out) {
  std::vector<float> attn;
  if (config_.attention == models::AttentionKind::kGqa) {
    CAPPLAN_RETURN_IF_ERROR(GqaAttention(layer, batch, rows, h, tags, &attn));
  } else {
    CAPPLAN_RETURN_IF_ERROR(MlaAttention(layer, batch, rows, h, tags, &attn));
  }
  CAPPLAN_ASSIGN_OR_RETURN(*out, Gemm(w_.layers[layer].wo, attn, static_cast<int>(rows.size())));
  return Status::Ok();
}

}  // namespace capplan::engine
