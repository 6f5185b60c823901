// A forward step's time split by the simulator's op classes (models/ops.h
// OpClass), so a replay can compare attention, dense GEMM, MoE, elementwise
// and overhead separately (calibrate/ENGINE_RUN.md "op_us"). A backend marks
// where work of each class begins; consecutive marks split the step's span
// into segments, each charged to the class of the mark that opened it.
// Host work inside the step (routing, page-table building, the logits
// download and argmax) is also summed on its own in host_us.
#ifndef CAPPLAN_ENGINE_OP_TIMES_H_
#define CAPPLAN_ENGINE_OP_TIMES_H_

#include <array>
#include <chrono>
#include <utility>
#include <vector>

#include "models/ops.h"

namespace capplan::engine {

constexpr int kEngineOpClasses = 6;  // OpClass values

struct OpClassTimes {
  std::array<double, kEngineOpClasses> us{};  // by OpClass; communication stays 0 (one rank)
  double host_us = 0;
  bool valid = false;  // false: the backend did not split this span
};

// Host-clock marks (the CPU backend; host_us on the CUDA backend).
class HostOpMarks {
 public:
  using Clock = std::chrono::steady_clock;
  void Clear() { marks_.clear(); }
  void Mark(models::OpClass c) {
    if (marks_.empty() || marks_.back().first != c) marks_.emplace_back(c, Clock::now());
  }
  // Closes the last segment now and returns the split.
  OpClassTimes Finish() const {
    OpClassTimes t;
    const auto end = Clock::now();
    for (size_t i = 0; i < marks_.size(); ++i) {
      const auto stop = i + 1 < marks_.size() ? marks_[i + 1].second : end;
      t.us[static_cast<int>(marks_[i].first)] +=
          std::chrono::duration<double, std::micro>(stop - marks_[i].second).count();
    }
    t.valid = !marks_.empty();
    return t;
  }

 private:
  std::vector<std::pair<models::OpClass, Clock::time_point>> marks_;
};

// Sums host-side work of one step (RAII: adds the scope's duration).
class HostSpan {
 public:
  explicit HostSpan(double* sum_us) : sum_(sum_us), t0_(std::chrono::steady_clock::now()) {}
  ~HostSpan() {
    *sum_ +=
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count();
  }
  HostSpan(const HostSpan&) = delete;
  HostSpan& operator=(const HostSpan&) = delete;

 private:
  double* sum_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_OP_TIMES_H_
