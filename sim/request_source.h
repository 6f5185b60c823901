// Where a pool reads its requests: by index, on demand, so that a run holds
// one copy of its workload (the scenario's, for a scenario run) however many
// requests it has, and per-request state only while a request is in flight
// (sim/request_table.h).
#ifndef CAPPLAN_SIM_REQUEST_SOURCE_H_
#define CAPPLAN_SIM_REQUEST_SOURCE_H_

#include <cstdint>
#include <vector>

namespace capplan::sim {

struct SimRequestSpec {
  int64_t id = 0;
  int64_t arrival_ns = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  bool warmup = false;  // excluded from latency statistics
  // A follow-up (the next turn of a conversation): issued think_ns after
  // request `after` (an index into the specs) completes or fails, instead of
  // at arrival_ns. -1: an independent request.
  int64_t after = -1;
  int64_t think_ns = 0;
};

class RequestSource {
 public:
  virtual ~RequestSource() = default;
  virtual int64_t size() const = 0;
  // 0 <= idx < size(); read once per request and pool when it arrives, and
  // once per request when the pool is built.
  virtual SimRequestSpec At(int32_t idx) const = 0;
};

// Over a vector of specs (tests, tools).
class SpecVector : public RequestSource {
 public:
  explicit SpecVector(const std::vector<SimRequestSpec>& specs) : specs_(specs) {}
  int64_t size() const override { return static_cast<int64_t>(specs_.size()); }
  SimRequestSpec At(int32_t idx) const override { return specs_[static_cast<size_t>(idx)]; }

 private:
  const std::vector<SimRequestSpec>& specs_;
};

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_REQUEST_SOURCE_H_
