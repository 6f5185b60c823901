#include "sim/step_pricer.h"

#include <algorithm>
#include <bit>

namespace capplan {

int64_t BucketValue(int64_t v) {
  if (v < 512) return v;
  const int shift = std::bit_width(static_cast<uint64_t>(v)) - 9;
  return ((v >> shift) << shift) + (int64_t{1} << (shift - 1));
}

int64_t BucketEnd(int64_t v) {
  if (v < 512) return v;
  const int shift = std::bit_width(static_cast<uint64_t>(v)) - 9;
  return (((v >> shift) + 1) << shift) - 1;
}

const StepCost& ModelStepPricer::Price(const StepWork& work) {
  const int64_t bucket = BucketValue(work.decode_ctx_sum);
  const bool packed = work.prefill.empty() && work.decode_n < (int64_t{1} << 20) &&
                      bucket < (int64_t{1} << 44);
  const uint64_t word = static_cast<uint64_t>(work.decode_n) << 44 | static_cast<uint64_t>(bucket);
  Slot* slot = nullptr;
  if (packed) {
    slot = &decode_slots_[(word * 0x9E3779B97F4A7C15ull) >> 52];
    if (slot->word == word) {
      ++hits_;
      return *slot->cost;
    }
    auto it = decode_memo_.find(word);
    if (it != decode_memo_.end()) {
      ++hits_;
      *slot = {word, &it->second};
      return it->second;
    }
  }
  key_.clear();
  key_.push_back(work.decode_n);
  key_.push_back(bucket);
  for (const auto& c : work.prefill) {
    key_.push_back(c.new_tokens);
    key_.push_back(BucketValue(c.cached_tokens));
  }
  auto it = memo_.find(key_);
  if (it != memo_.end()) {
    ++hits_;
    return it->second;
  }
  ++misses_;
  // The canonical batch of this signature: decode contexts spread evenly so
  // they sum to the bucketed total.
  BatchShape b;
  for (const auto& c : work.prefill) b.prefill.push_back({c.new_tokens, BucketValue(c.cached_tokens)});
  const int64_t sum = key_[1];
  const int64_t n = work.decode_n;
  b.decode_context.reserve(n);
  for (int64_t i = 0; i < n; ++i) b.decode_context.push_back(sum / n + (i < sum % n ? 1 : 0));
  BuildStepOps(*model_, b, &ops_);
  if (opt_.kv_verify && n > 0) {
    // Tags of every page the decode step reads, every layer, checked by a
    // separate kernel before attention (engine/page_tag.h).
    Op v;
    v.kind = OpKind::kKvVerify;
    v.op_class = OpClass::kAttention;
    v.name = "kv.verify";
    v.count = opt_.verify_kernels_per_step;
    const double pages =
        static_cast<double>(sum) / std::max<int64_t>(1, opt_.page_size) + 0.5 * n;  // expected
    v.bytes = pages * model_->card.num_layers * opt_.verify_tag_bytes_per_page_per_layer /
              static_cast<double>(std::max<int64_t>(v.count, 1));
    v.batch = n;
    v.q_tokens = n;
    v.heads = 1;
    ops_.push_back(v);
  }
  StepContext ctx;
  ctx.cuda_graph = opt_.cuda_graphs && work.prefill.empty() && n <= opt_.cuda_graph_max_bs;
  ctx.overlap_schedule = opt_.overlap_schedule;
  ctx.requests = n + static_cast<int64_t>(work.prefill.size());
  StepCost c = cost_->PriceOps(ops_, ctx, &warnings_);
  if (packed) {
    const StepCost& stored = decode_memo_.emplace(word, c).first->second;
    *slot = {word, &stored};
    return stored;
  }
  return memo_.emplace(key_, c).first->second;
}

}  // namespace capplan
