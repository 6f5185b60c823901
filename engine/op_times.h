// A forward step's time by the layer program's op ids (models/layer_program.h),
// each summed over the layers of the step that ran it, so a replay prices and
// compares the same ops the engine ran (calibrate/ENGINE_RUN.md "op_id_us").
// The split by op class ("op_us") is derived from it by each op's class:
// one source for both.
//
// A backend marks each program op as it starts it and the time until the
// next op's start (or the end of the span) is that op's. On the CPU backend
// that is the host clock around the op's function; on the CUDA backend one
// CUDA event per op on the default stream, so an op also holds GPU idle time
// while the host works inside it, and an op whose work another op's kernels
// do (a fused op) gets the time between two adjacent events: about nothing.
// Host work inside the step (routing, page-table building, the logits
// download and argmax) is also summed on its own in host_us.
#ifndef CAPPLAN_ENGINE_OP_TIMES_H_
#define CAPPLAN_ENGINE_OP_TIMES_H_

#include <array>
#include <chrono>
#include <string>
#include <vector>

#include "models/layer_program.h"
#include "models/ops.h"

namespace capplan::engine {

constexpr int kEngineOpClasses = 6;  // OpClass values

// One op id of the program and its time in a step.
struct OpIdTime {
  std::string id;
  models::OpClass op_class = models::OpClass::kOverhead;
  double us = 0;  // summed over the layers that ran it
};

struct StepOpTimes {
  std::vector<OpIdTime> ops;  // one per op id, in the order the step first ran them
  double host_us = 0;
  bool valid = false;  // false: the backend did not time this span's ops

  // Adds `us` to op's id (a new entry the first time the id runs).
  void Add(const models::ProgramOp& op, double us);
  // The times summed by op class (indexed by OpClass); communication stays
  // 0 on one rank, where a collective moves nothing.
  std::array<double, kEngineOpClasses> ClassUs() const;
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
