#include "sim/step_pricer.h"

#include "sim/energy.h"
#include "sim/micro_batch_overlap.h"

#include <algorithm>
#include <bit>


namespace capplan::sim {

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
  const bool one_chunk = key_.size() == ChunkPriceTable::kWords;
  if (one_chunk) {
    if (const StepCost* c = chunk_memo_.Find(key_.data())) {
      ++hits_;
      return *c;
    }
  } else if (auto it = memo_.find(key_); it != memo_.end()) {
    ++hits_;
    return it->second;
  }
  ++misses_;
  StepCost c;
  if (shared_ == nullptr) {
    c = Compute(work, &warnings_);
  } else {
    const SharedStepPrices::Entry* e = shared_->Find(key_);
    if (e == nullptr) {
      std::set<std::string> raised;
      const StepCost fresh = Compute(work, &raised);
      e = shared_->Insert(key_, fresh, std::move(raised));
    }
    // Past the cap the order of insertion decides which warnings stay:
    // price into the run's own set then, exactly as without sharing.
    c = e->cost;
    if (std::find(merged_.begin(), merged_.end(), e->warnings) == merged_.end()) {
      if (MergePriceWarnings(*e->warnings, &warnings_)) {
        merged_.push_back(e->warnings);
      } else {
        c = Compute(work, &warnings_);
      }
    }
  }
  if (packed) {
    const StepCost& stored = decode_memo_.emplace(word, c).first->second;
    *slot = {word, &stored};
    return stored;
  }
  // Clearing drops only references Price() returned before this call,
  // which its contract already ends.
  if (prefill_memo_entries() >= kMaxPrefillMemo) {
    memo_.clear();
    chunk_memo_.Clear();
  }
  if (one_chunk) return chunk_memo_.Insert(key_.data(), c);
  return memo_.emplace(key_, c).first->second;
}

StepContext ModelStepPricer::BuildOps(const StepWork& work, int64_t priced_ctx_sum) {
  // The canonical batch of this signature: decode contexts spread evenly so
  // they sum to the bucketed total.
  models::BatchShape b;
  for (const auto& c : work.prefill) b.prefill.push_back({c.new_tokens, BucketValue(c.cached_tokens)});
  const int64_t sum = priced_ctx_sum;
  const int64_t n = work.decode_n;
  b.decode_context.reserve(n);
  for (int64_t i = 0; i < n; ++i) b.decode_context.push_back(sum / n + (i < sum % n ? 1 : 0));
  const bool spec = opt_.spec_draft_tokens > 0;
  if (spec) b.decode_query_tokens = 1 + opt_.spec_draft_tokens;
  models::BuildStepOps(*model_, b, &ops_);
  if (opt_.kv_verify && n > 0) {
    // Tags of every page the decode step reads, every layer, checked by a
    // separate kernel before attention (engine/page_tag.h).
    models::Op v;
    v.kind = models::OpKind::kKvVerify;
    v.op_class = models::OpClass::kAttention;
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
  if (spec) AppendDraftOps(b);
  StepContext ctx;
  ctx.cuda_graph = opt_.cuda_graphs && work.prefill.empty() && n <= opt_.cuda_graph_max_bs;
  ctx.overlap_schedule = opt_.overlap_schedule;
  ctx.host_s = opt_.step_host_s;
  ctx.cpu_schedule_s = opt_.cpu_schedule_s;
  ctx.cpu_schedule_per_request_s = opt_.cpu_schedule_per_request_s;
  ctx.cpu_output_per_token_s = opt_.cpu_output_per_token_s;
  ctx.output_separate = opt_.output_separate;
  ctx.nvls = opt_.nvls;
  ctx.nvlink_gpus = model_->layout.NvlinkGpus();
  ctx.requests = n + static_cast<int64_t>(work.prefill.size());
  ctx.tokens_out = ctx.requests;
  return ctx;
}

StepCost ModelStepPricer::Compute(const StepWork& work, std::set<std::string>* warnings) {
  StepCost c;
  StepWork a, b;
  if (opt_.overlap_decode_tokens > 0 && SplitSignature(work, &a, &b)) {
    c = ComputeOverlapped(work, a, b, warnings);
  } else {
    const StepContext ctx = BuildOps(work, key_[1]);
    c = cost_->PriceOps(ops_, ctx, warnings);
  }
  if (opt_.power != nullptr) ChargeStepPower(*opt_.power, opt_.power_limit_w, &c);
  if (opt_.spec_draft_tokens > 0 && work.decode_n > 0) {
    c.spec_verify_seconds =
        c.seconds - c.class_seconds[static_cast<int>(models::OpClass::kOverhead)] - c.draft_seconds;
  }
  return c;
}

bool ModelStepPricer::SplitSignature(const StepWork& work, StepWork* a, StepWork* b) const {
  // Split the signature's canonical batch, not the step itself, so that the
  // price stays a function of the signature.
  StepWork canonical = work;
  canonical.decode_ctx_sum = key_[1];
  for (auto& c : canonical.prefill) c.cached_tokens = BucketValue(c.cached_tokens);
  return SplitForOverlap(canonical, 1 + opt_.spec_draft_tokens, opt_.overlap_decode_tokens,
                         opt_.overlap_prefill_tokens, a, b);
}

StepCost ModelStepPricer::ComputeOverlapped(const StepWork& work, const StepWork& a,
                                            const StepWork& b, std::set<std::string>* warnings) {
  const StepContext whole = BuildOps(work, key_[1]);
  StepCost part[2];
  double all_to_all[2] = {0, 0};
  const StepWork* halves[2] = {&a, &b};
  for (int i = 0; i < 2; ++i) {
    StepContext ctx = BuildOps(*halves[i], halves[i]->decode_ctx_sum);
    // One graph holds both micro-batches: captured for the whole batch.
    ctx.cuda_graph = whole.cuda_graph;
    part[i] = cost_->PriceOps(ops_, ctx, warnings);
    all_to_all_ops_.clear();
    for (const models::Op& op : ops_) {
      if (op.kind == models::OpKind::kAllToAll) all_to_all_ops_.push_back(op);
    }
    if (!all_to_all_ops_.empty()) {
      const StepCost comm = cost_->PriceOps(all_to_all_ops_, ctx, nullptr);
      all_to_all[i] = comm.bound_seconds[static_cast<int>(Bound::kCommunication)];
    }
  }
  return CombineMicroBatches(part[0], all_to_all[0], part[1], all_to_all[1], whole);
}

const std::vector<models::Op>& ModelStepPricer::StepOps(const StepWork& work, StepContext* ctx) {
  *ctx = BuildOps(work, BucketValue(work.decode_ctx_sum));
  return ops_;
}

void ModelStepPricer::AppendDraftOps(const models::BatchShape& target) {
  const size_t first = ops_.size();
  models::BuildStepOps(*opt_.draft, target, &draft_ops_);  // extend: same rows as the target's
  ops_.insert(ops_.end(), draft_ops_.begin(), draft_ops_.end());
  const int64_t k = opt_.spec_draft_tokens;
  if (!target.decode_context.empty() && k > 1) {
    models::BatchShape one;
    one.decode_context = target.decode_context;
    models::BuildStepOps(*opt_.draft, one, &draft_ops_);
    for (models::Op& op : draft_ops_) op.count *= k - 1;
    ops_.insert(ops_.end(), draft_ops_.begin(), draft_ops_.end());
  }
  for (size_t i = first; i < ops_.size(); ++i) ops_[i].draft = true;
}

const SharedStepPrices::Entry* SharedStepPrices::Find(const std::vector<int64_t>& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : &it->second;
}

const SharedStepPrices::Entry* SharedStepPrices::Insert(const std::vector<int64_t>& key,
                                                        const StepCost& cost,
                                                        std::set<std::string> warnings) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it != map_.end()) return &it->second;
  const std::set<std::string>* w = nullptr;
  for (const auto& s : warning_sets_) {
    if (*s == warnings) w = s.get();
  }
  if (w == nullptr) {
    warning_sets_.push_back(std::make_unique<const std::set<std::string>>(std::move(warnings)));
    w = warning_sets_.back().get();
  }
  return &map_.emplace(key, Entry{cost, w}).first->second;
}

size_t SharedStepPrices::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.size();
}

size_t StepPriceCache::tables() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tables_.size();
}

SharedStepPrices* StepPriceCache::For(const std::string& fingerprint) {
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<SharedStepPrices>& t = tables_[fingerprint];
  if (!t) t = std::make_unique<SharedStepPrices>();
  return t.get();
}

}  // namespace capplan::sim
