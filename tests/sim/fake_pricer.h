// A step pricer for DES tests that need no model: a fixed cost per
// iteration plus linear terms in prefill tokens, decode requests and decode
// context, so tests can reason about exact times.
#ifndef CAPPLAN_TESTS_SIM_FAKE_PRICER_H_
#define CAPPLAN_TESTS_SIM_FAKE_PRICER_H_

#include "sim/step_pricer.h"

namespace capplan::sim {

class FakePricer : public StepPricer {
 public:
  double fixed_s = 1e-3;
  double per_prefill_token_s = 1e-6;
  double per_decode_s = 1e-5;
  double per_context_token_s = 1e-8;
  const StepCost& Price(const StepWork& w) override {
    int64_t prefill = 0;
    for (const auto& c : w.prefill) prefill += c.new_tokens;
    cost_ = StepCost();
    cost_.seconds = fixed_s + per_prefill_token_s * prefill + per_decode_s * w.decode_n +
                    per_context_token_s * w.decode_ctx_sum;
    cost_.class_seconds[0] = cost_.seconds;
    cost_.bound_seconds[0] = cost_.seconds;
    return cost_;
  }

 private:
  StepCost cost_;
};

}  // namespace capplan::sim

#endif  // CAPPLAN_TESTS_SIM_FAKE_PRICER_H_
