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
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "hw/power.h"
#include "models/ops.h"
#include "sim/chunk_price_table.h"
#include "sim/cost_model.h"

namespace capplan::sim {

// What one attention rank does in one iteration.
struct StepWork {
  std::vector<models::BatchShape::Chunk> prefill;
  int64_t decode_n = 0;
  int64_t decode_ctx_sum = 0;  // contexts incl. the new token
  bool empty() const { return prefill.empty() && decode_n == 0; }
};

class StepPricer {
 public:
  virtual ~StepPricer() = default;
  // The reference stays valid until the next call. A function of `work`:
  // the simulator may keep a price and reuse it for an equal step.
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
  // The engine's per-step host costs (models/engine_step_costs.h).
  double step_host_s = 0;
  double cpu_schedule_s = 0;
  double cpu_schedule_per_request_s = 0;
  double cpu_output_per_token_s = 0;
  bool output_separate = false;
  bool nvls = false;  // all-reduces run NCCL's NVLS algorithm
  bool kv_verify = false;
  int64_t page_size = 0;  // tokens per KV page; PrepareRun sets the deployment's
  double verify_tag_bytes_per_page_per_layer = 16;
  int64_t verify_kernels_per_step = 1;
  // Speculative decoding (0: off): every decode request verifies
  // spec_draft_tokens + 1 positions, and `draft` (DraftCard, sharded like
  // the target) runs its passes in the same step (ModelStepPricer).
  int64_t spec_draft_tokens = 0;
  const models::ShardedModel* draft = nullptr;
  // The profile's power model (null: none) charges each step's energy, and
  // a board power limit (deployment.power_limit_w; 0: none) slows the
  // kernels that would draw more (sim/energy.h ChargeStepPower).
  const hw::PowerModel* power = nullptr;
  double power_limit_w = 0;
  // Two-batch overlap (sim/micro_batch_overlap.h): a step of at least this
  // many tokens runs as two micro-batches (decode only / holding a prefill
  // chunk); 0: never.
  int64_t overlap_decode_tokens = 0;
  int64_t overlap_prefill_tokens = 0;
};

struct StepKeyHash {
  size_t operator()(const std::vector<int64_t>& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

// Step prices shared by the runs of one sweep or search whose pools price
// alike (the same model, hardware and deployment: only the workload
// differs), so a probe at a new request rate does not price again what the
// last one did. Each run keeps its own memo (its hit and miss counts stay
// its own) and looks here on a miss. An entry keeps the out-of-range
// warnings its ops raised, so a run's warnings are the same whether it
// priced a signature or found it here. Thread-safe.
class SharedStepPrices {
 public:
  struct Entry {
    StepCost cost;
    // The warnings its ops raise; equal sets are one object (most
    // signatures of a pool raise the same ones), so a run merges each once.
    const std::set<std::string>* warnings = nullptr;
  };
  // Null when absent. An entry, once stored, never changes or moves.
  const Entry* Find(const std::vector<int64_t>& key) const;
  // Stores the signature's cost and warnings unless another run stored the
  // key first; returns the stored entry.
  const Entry* Insert(const std::vector<int64_t>& key, const StepCost& cost,
                      std::set<std::string> warnings);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::vector<int64_t>, Entry, StepKeyHash> map_;
  std::vector<std::unique_ptr<const std::set<std::string>>> warning_sets_;
};

// SharedStepPrices by pool fingerprint (PrepareRun builds it from everything
// a pool's prices depend on); one per sweep or search. Thread-safe.
class StepPriceCache {
 public:
  SharedStepPrices* For(const std::string& fingerprint);
  size_t tables() const;  // distinct fingerprints seen (for tests)

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<SharedStepPrices>> tables_;
};

// BuildStepOps + a CostModel, memoized on the signature; `shared` (may be
// null) is looked at before pricing a signature the run has not seen.
class ModelStepPricer : public StepPricer {
 public:
  ModelStepPricer(const models::ShardedModel* model, const CostModel* cost,
                  ModelPricerOptions options, SharedStepPrices* shared = nullptr)
      : model_(model), cost_(cost), opt_(options), shared_(shared) {}
  const StepCost& Price(const StepWork& work) override;
  int64_t SameCostUntil(const StepWork& work) const override {
    return BucketEnd(work.decode_ctx_sum);
  }
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  // Signatures with prefill held in the memo; at most kMaxPrefillMemo.
  size_t prefill_memo_entries() const { return memo_.size() + chunk_memo_.size(); }
  // A day-long trace has a new prompt length in almost every step, so the
  // signatures with prefill would grow with the trace (~190 B each); past
  // this many the memo starts over. Pure decode signatures are bounded by
  // batch size x context buckets and are kept.
  static constexpr size_t kMaxPrefillMemo = size_t{1} << 16;
  const std::set<std::string>& warnings() const { return warnings_; }
  // The ops Price() prices for `work`'s signature (the target's, then the
  // speculative draft's, marked `draft`) and the step's context; valid until
  // the next call (`capplan simulate --explain-step`).
  const std::vector<models::Op>& StepOps(const StepWork& work, StepContext* ctx);

 private:
  // Fills ops_ with the canonical batch of a signature whose decode contexts
  // sum to `priced_ctx_sum`; returns the step's context.
  StepContext BuildOps(const StepWork& work, int64_t priced_ctx_sum);
  // Prices key_'s signature: the canonical batch through the cost model.
  StepCost Compute(const StepWork& work, std::set<std::string>* warnings);
  // Splits key_'s signature in two micro-batches (SplitForOverlap); false
  // when the engine runs it whole.
  bool SplitSignature(const StepWork& work, StepWork* a, StepWork* b) const;
  // Compute for a step the engine runs as micro-batches `a` and `b`.
  StepCost ComputeOverlapped(const StepWork& work, const StepWork& a, const StepWork& b,
                             std::set<std::string>* warnings);
  // Appends the draft model's passes of one speculative step to ops_:
  // a draft extend over the prefill chunks and each decode request's
  // verified positions (k + 1 rows, the most it can accept), then k - 1
  // one-token draft passes that propose the rest of the next draft.
  void AppendDraftOps(const models::BatchShape& target);

  const models::ShardedModel* model_;
  const CostModel* cost_;
  ModelPricerOptions opt_;
  SharedStepPrices* shared_;
  std::vector<const std::set<std::string>*> merged_;  // shared warning sets merged so far
  std::unordered_map<std::vector<int64_t>, StepCost, StepKeyHash> memo_;
  // Pure decode steps, the fast path's usual question, keyed by decode_n and
  // the bucketed context sum packed in one word.
  std::unordered_map<uint64_t, StepCost> decode_memo_;
  // A direct-mapped cache in front of decode_memo_ (its nodes never move).
  struct Slot {
    uint64_t word = ~uint64_t{0};
    const StepCost* cost = nullptr;
  };
  std::vector<Slot> decode_slots_ = std::vector<Slot>(4096);
  // Signatures with one prefill chunk (key_'s four words), the usual mixed
  // step, apart from memo_'s longer ones.
  ChunkPriceTable chunk_memo_;
  std::vector<int64_t> key_;
  std::vector<models::Op> ops_;
  std::vector<models::Op> draft_ops_;
  std::vector<models::Op> all_to_all_ops_;
  std::set<std::string> warnings_;
  int64_t hits_ = 0, misses_ = 0;
};

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_STEP_PRICER_H_
