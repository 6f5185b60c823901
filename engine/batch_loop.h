// The continuous-batching loop: FIFO admission by KV, chunked prefill mixed
// with decode, one verification batch before every step, and a record of
// every iteration's batch and measured time (the engine's own timers).
//
// Admission reserves a request's whole footprint (prompt + output pages)
// against the pool, so an admitted request never needs preempting; pages are
// still allocated lazily, one step at a time, which is what exercises epochs
// and deferred reuse. A request that can never fit fails alone.
#ifndef CAPPLAN_ENGINE_BATCH_LOOP_H_
#define CAPPLAN_ENGINE_BATCH_LOOP_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "engine/backend.h"
#include "engine/integrity_tracker.h"
#include "engine/kv_page_manager.h"
#include "engine/op_times.h"
#include "models/ops.h"

namespace capplan::engine {

struct EngineRequest {
  int64_t id = 0;
  std::vector<int32_t> prompt;
  int64_t output_len = 1;
};

struct RequestResult {
  int64_t id = 0;
  bool failed = false;
  std::string error;
  int64_t prompt_len = 0;
  std::vector<int32_t> output;  // greedy tokens
  double first_token_us = 0;    // engine time from loop start to its first token
  double finish_us = 0;
};

// One scheduler iteration. `batch` maps 1:1 onto models/ops.h BatchShape.
struct IterationRecord {
  int64_t step = 0;
  models::BatchShape batch;
  double verify_us = 0;    // the verification batch (0 with kv_integrity none)
  double forward_us = 0;   // append + attention + FFN + sampling
  double measured_us = 0;  // verify + forward: what the iteration cost
  StepOpTimes op;          // forward_us by program op id, where the backend times its ops
};

struct LoopOptions {
  // Page size and chunk budget come from the caller (serve-bench: the
  // scenario, or its engine profile's defaults).
  int32_t page_size = 0;
  int32_t num_pages = 1024;  // incl. the poison page
  int64_t chunked_prefill_tokens = 0;
  int max_running = 64;
  uint64_t page_shuffle_seed = 0;  // tests: permute physical page assignment
};

class BatchLoop {
 public:
  // Called at the top of every step; the self-test injects faults here.
  using StepHook = std::function<Status(int64_t step, BatchLoop* loop)>;

  BatchLoop(EngineBackend* backend, IntegrityTracker* tracker, LoopOptions options);

  void Submit(EngineRequest r) { waiting_.push_back(std::move(r)); }
  void set_step_hook(StepHook hook) { hook_ = std::move(hook); }
  // Runs until every request finished or failed.
  Status Run();

  KvPageManager& kv() { return kv_; }
  // Running requests that will decode next step, with their written tokens.
  std::vector<VerifyItem> DecodingRequests() const;
  const std::map<int64_t, RequestResult>& results() const { return results_; }
  const std::vector<IterationRecord>& iterations() const { return iterations_; }
  double total_us() const { return clock_us_; }

 private:
  struct Running {
    EngineRequest req;
    int64_t cached = 0;  // tokens in the cache
    int32_t committed_pages = 0;
    RequestResult result;
    bool PrefillDone() const { return cached >= static_cast<int64_t>(req.prompt.size()); }
  };
  // One request's share of a step: a decode token or a prefill chunk.
  struct Planned {
    int64_t id;
    int64_t start;
    int64_t count;
    bool decode;
  };
  Status Admit();
  Status Step();
  std::vector<Planned> PlanStep() const;
  Running* Find(int64_t id);
  void VerifyIntegrity(const std::vector<Planned>& plan, IterationRecord* rec);
  std::vector<StepRequest> BuildBatch(const std::vector<Planned>& plan, IterationRecord* rec);
  Status TakeTokens(const std::vector<StepRequest>& batch, const std::vector<int32_t>& next);
  void Fail(int64_t id, const std::string& error);
  Status Finish(int64_t id);

  EngineBackend* backend_;
  IntegrityTracker* tracker_;
  LoopOptions opt_;
  KvPageManager kv_;
  std::deque<EngineRequest> waiting_;
  std::vector<Running> running_;  // admission order
  int64_t committed_pages_ = 0;
  int64_t step_ = 0;
  double clock_us_ = 0;
  StepHook hook_;
  std::map<int64_t, RequestResult> results_;
  std::vector<IterationRecord> iterations_;
};

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_BATCH_LOOP_H_
