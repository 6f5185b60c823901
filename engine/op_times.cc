#include "engine/op_times.h"

namespace capplan::engine {

void StepOpTimes::Add(const models::ProgramOp& op, double us) {
  // A step runs a few dozen distinct ids: a scan beats a map here.
  for (OpIdTime& t : ops) {
    if (t.id == op.id) {
      t.us += us;
      return;
    }
  }
  ops.push_back(OpIdTime{op.id, op.op_class, us});
}

std::array<double, kEngineOpClasses> StepOpTimes::ClassUs() const {
  std::array<double, kEngineOpClasses> by_class{};
  for (const OpIdTime& t : ops) by_class[static_cast<int>(t.op_class)] += t.us;
  return by_class;
}

}  // namespace capplan::engine
