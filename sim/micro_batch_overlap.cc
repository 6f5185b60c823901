#include "sim/micro_batch_overlap.h"

#include <algorithm>

#include "models/expert_parallel.h"
#include "sim/op_provenance.h"

namespace capplan::sim {

Status ParseTwoBatchOverlap(JsonObject& d, const models::EngineProfile& engine,
                            const std::string& release, int ep, models::MoeAllToAll all_to_all,
                            bool* out) {
  *out = false;
  CAPPLAN_RETURN_IF_ERROR(d.Get("two_batch_overlap", out));
  if (!*out) return Status::Ok();
  const models::MicroBatchOverlapRule& rule = engine.micro_batch_overlap;
  if (!rule.present()) {
    return d.Error("two_batch_overlap",
                   release +
                       " has no two-batch overlap in capplan's engine profile "
                       "(models/engines/*.json micro_batch_overlap): use an engine "
                       "version that has one, or remove two_batch_overlap");
  }
  if (ep < 2) {
    return d.Invalid("two_batch_overlap", release + " " + rule.flag +
                                              " overlaps the MoE all-to-all of expert "
                                              "parallelism: set ep > 1, or remove "
                                              "two_batch_overlap");
  }
  if (rule.requires_deepep && all_to_all != models::MoeAllToAll::kDeepEp) {
    return d.Invalid("two_batch_overlap",
                     release + " " + rule.flag +
                         " needs the DeepEP all-to-all: set expert_parallel.all_to_all "
                         "\"deepep\", or remove two_batch_overlap");
  }
  return Status::Ok();
}

bool SplitForOverlap(const StepWork& work, int64_t decode_query_tokens, int64_t decode_threshold,
                     int64_t prefill_threshold, StepWork* a, StepWork* b) {
  const int64_t q = std::max<int64_t>(decode_query_tokens, 1);
  int64_t total = work.decode_n * q;
  for (const auto& c : work.prefill) total += c.new_tokens;
  const int64_t threshold = work.prefill.empty() ? decode_threshold : prefill_threshold;
  if (total < threshold) return false;
  const int64_t cut = total / 2;
  *a = StepWork();
  *b = StepWork();
  a->decode_n = std::min(work.decode_n, cut / q);
  b->decode_n = work.decode_n - a->decode_n;
  if (work.decode_n > 0) {
    a->decode_ctx_sum = work.decode_ctx_sum * a->decode_n / work.decode_n;
    b->decode_ctx_sum = work.decode_ctx_sum - a->decode_ctx_sum;
  }
  int64_t room = cut - a->decode_n * q;
  for (const auto& c : work.prefill) {
    const int64_t take = std::clamp<int64_t>(room, 0, c.new_tokens);
    if (take > 0) a->prefill.push_back({take, c.cached_tokens});
    if (take < c.new_tokens) b->prefill.push_back({c.new_tokens - take, c.cached_tokens + take});
    room -= take;
  }
  return !a->empty() && !b->empty();
}

double OverlappedSeconds(const MicroBatchSeconds& a, const MicroBatchSeconds& b) {
  return std::max({a.compute + b.compute, a.all_to_all + b.all_to_all, a.compute + a.all_to_all,
                   b.compute + b.all_to_all});
}

namespace {

// What PriceOps added for launches and the host (only it is bound kOverhead).
double HostPart(const StepCost& c) { return c.bound_seconds[static_cast<int>(Bound::kOverhead)]; }

}  // namespace

StepCost CombineMicroBatches(const StepCost& a, double a2a_a, const StepCost& b, double a2a_b,
                             const StepContext& whole) {
  StepCost c = a;
  c.Add(b);
  const double host = HostPart(a) + HostPart(b);
  constexpr int kOverheadClass = static_cast<int>(models::OpClass::kOverhead);
  constexpr int kHost = static_cast<int>(OpProvenance::kHost);
  constexpr int kOverheadBound = static_cast<int>(Bound::kOverhead);
  c.class_seconds[kOverheadClass] -= host;
  c.provenance_seconds[kHost] -= host;
  c.bound_seconds[kOverheadBound] -= host;
  const MicroBatchSeconds ma{a.seconds - HostPart(a) - a2a_a, a2a_a};
  const MicroBatchSeconds mb{b.seconds - HostPart(b) - a2a_b, a2a_b};
  const double gpu_kernels = OverlappedSeconds(ma, mb);
  const double hidden =
      std::max(0.0, ma.compute + ma.all_to_all + mb.compute + mb.all_to_all - gpu_kernels);
  constexpr int kCollective = static_cast<int>(OpProvenance::kCollective);
  const double collective = c.provenance_seconds[kCollective];
  if (collective > 0) c.spread_seconds[kCollective] *= (collective - hidden) / collective;
  c.class_seconds[static_cast<int>(models::OpClass::kCommunication)] -= hidden;
  c.bound_seconds[static_cast<int>(Bound::kCommunication)] -= hidden;
  c.provenance_seconds[kCollective] -= hidden;
  c.overlap_hidden_seconds = hidden;
  // Both micro-batches launch their kernels; the engine loop, scheduling
  // and output run once for the step.
  const double gpu = gpu_kernels + c.launch_seconds;
  const HostTime h = PriceHost(whole, gpu);
  const double overhead = c.launch_seconds + (h.step - gpu);
  c.class_seconds[kOverheadClass] += overhead;
  c.provenance_seconds[kHost] += overhead;
  c.bound_seconds[kOverheadBound] += overhead;
  c.seconds = h.step;
  return c;
}

}  // namespace capplan::sim
