// Prices one rank's iteration from aggregated quantities, memoized: the hot
// loop never re-prices an identical batch signature.
//
// Signature (the memo key): the prefill chunks (new tokens exact, cached
// tokens bucketed), the number of decode requests (exact) and the sum of
// their contexts (bucketed). A bucket keeps the top 9 significant bits of the
// value (values < 512 exact) and prices at the bucket midpoint, so the
// priced context sum is within 2^-9 (0.2%) of the true sum. Decode
// attention bytes and FLOPs are linear in each context, so their error is
// bounded the same way; a non-linear op (a DSA indexer's top-k cap at short
// contexts) sees every decode request at the mean context, which can
// misprice mixes of contexts on both sides of the cap.
#ifndef CAPPLAN_SIM_STEP_PRICER_H_
#define CAPPLAN_SIM_STEP_PRICER_H_

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/ops.h"
#include "sim/cost_model.h"

namespace capplan {

// What one attention rank does in one iteration.
struct StepWork {
  std::vector<BatchShape::Chunk> prefill;
  int64_t decode_n = 0;
  int64_t decode_ctx_sum = 0;  // contexts incl. the new token
  bool empty() const { return prefill.empty() && decode_n == 0; }
};

class StepPricer {
 public:
  virtual ~StepPricer() = default;
  // The reference stays valid until the next call.
  virtual const StepCost& Price(const StepWork& work) = 0;
  // The largest decode context sum that Price() prices exactly like `work`
  // (same prefill, same decode_n). The simulator's fast-forward prices a run
  // of decode iterations once per such range. A pricer that promises nothing
  // returns work.decode_ctx_sum: every iteration is priced.
  virtual int64_t SameCostUntil(const StepWork& work) const { return work.decode_ctx_sum; }
};

// Top 9 significant bits, midpoint of the bucket (see header comment).
int64_t BucketValue(int64_t v);
// The largest value in v's bucket.
int64_t BucketEnd(int64_t v);

struct ModelPricerOptions {
  bool cuda_graphs = true;
  int64_t cuda_graph_max_bs = 0;  // PrepareRun sets the engine's
  bool overlap_schedule = true;
  bool kv_verify = false;
  int64_t page_size = 0;  // tokens per KV page; PrepareRun sets the deployment's
  double verify_tag_bytes_per_page_per_layer = 16;
  int64_t verify_kernels_per_step = 1;
};

// BuildStepOps + a CostModel, memoized on the signature.
class ModelStepPricer : public StepPricer {
 public:
  ModelStepPricer(const ShardedModel* model, const CostModel* cost, ModelPricerOptions options)
      : model_(model), cost_(cost), opt_(options) {}
  const StepCost& Price(const StepWork& work) override;
  int64_t SameCostUntil(const StepWork& work) const override {
    return BucketEnd(work.decode_ctx_sum);
  }
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  const std::set<std::string>& warnings() const { return warnings_; }

 private:
  struct KeyHash {
    size_t operator()(const std::vector<int64_t>& k) const {
      uint64_t h = 1469598103934665603ull;
      for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
      return static_cast<size_t>(h);
    }
  };
  const ShardedModel* model_;
  const CostModel* cost_;
  ModelPricerOptions opt_;
  std::unordered_map<std::vector<int64_t>, StepCost, KeyHash> memo_;
  // Pure decode steps, the fast path's usual question, keyed by decode_n and
  // the bucketed context sum packed in one word.
  std::unordered_map<uint64_t, StepCost> decode_memo_;
  // A direct-mapped cache in front of decode_memo_ (its nodes never move).
  struct Slot {
    uint64_t word = ~uint64_t{0};
    const StepCost* cost = nullptr;
  };
  std::vector<Slot> decode_slots_ = std::vector<Slot>(4096);
  std::vector<int64_t> key_;
  std::vector<Op> ops_;
  std::set<std::string> warnings_;
  int64_t hits_ = 0, misses_ = 0;
};

}  // namespace capplan

#endif  // CAPPLAN_SIM_STEP_PRICER_H_
