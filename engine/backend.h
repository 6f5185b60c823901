// What the batching loop asks of a backend: run one step of the model slice
// over a batch of requests whose KV lives in pages named by page tables.
#ifndef CAPPLAN_ENGINE_BACKEND_H_
#define CAPPLAN_ENGINE_BACKEND_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "engine/integrity_tracker.h"
#include "engine/op_times.h"
#include "engine/page_tag.h"

namespace capplan::engine {

struct StepRequest {
  int64_t request = 0;
  std::vector<int32_t> tokens;  // this step's new tokens (prefill chunk or 1 decode token)
  int64_t start_position = 0;   // tokens already in the cache before them
  const std::vector<PageRef>* pages = nullptr;  // covers start_position + tokens
  bool want_token = false;                      // sample a next token from the last new token
};

// Called after every layer with that layer's output rows (all new tokens of
// the batch, request-major, `hidden` floats each). For numerics only.
using LayerProbe = std::function<void(int layer, const std::vector<float>& rows, int hidden)>;

class EngineBackend {
 public:
  virtual ~EngineBackend() = default;
  virtual std::string name() const = 0;  // "cpu" | "cuda"
  // Appends the new tokens' KV (stamping `tags` when non-null), attends over
  // each request's cache, and writes the greedy next token of every request
  // with want_token (-1 for the others) into *next_tokens.
  virtual Status Forward(const std::vector<StepRequest>& batch, PageTags* tags,
                         std::vector<int32_t>* next_tokens) = 0;
  // Logits of the last forward's sampled rows, one vector per want_token
  // request (numerics compares them across formats).
  virtual const std::vector<std::vector<float>>& last_logits() const = 0;
  virtual void set_probe(LayerProbe probe) = 0;

  // The engine's own timer around one span of backend work (a verification
  // batch, a forward step). The CPU backend reads the host clock; the CUDA
  // backend records CUDA events on its stream, so GPU time is what it
  // reports, never the host's view of asynchronous launches.
  virtual void StartTimer() { t0_ = std::chrono::steady_clock::now(); }
  virtual double StopTimerUs() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_)
        .count();
  }
  // The last Forward's time by program op id (engine/op_times.h), read
  // after StopTimerUs; invalid where the backend does not time its ops.
  virtual StepOpTimes last_op_times() const { return {}; }
  // The tracker for this backend: "verify" must check the tag array the
  // backend's append path stamps (host tags here; device tags on CUDA).
  virtual Result<std::unique_ptr<IntegrityTracker>> MakeTracker(const std::string& name,
                                                                int32_t num_pages) {
    return MakeIntegrityTracker(name, num_pages);
  }
  // What the run file records about the hardware ("cpu" for the CPU backend).
  virtual std::string gpu_name() const { return "cpu"; }
  virtual std::string driver_version() const { return ""; }
  virtual std::string cuda_version() const { return ""; }

 private:
  std::chrono::steady_clock::time_point t0_{};
};

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_BACKEND_H_
