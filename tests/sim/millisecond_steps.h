// Runs for timelines computed by hand: every step costs exactly 1 ms
// (FakePricer with only its fixed term), each run made with and without
// fast-forward, which must agree on every request's first token, finish
// and retractions. Returns the run without fast-forward.
#ifndef CAPPLAN_TESTS_SIM_MILLISECOND_STEPS_H_
#define CAPPLAN_TESTS_SIM_MILLISECOND_STEPS_H_

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "tests/sim/fake_pricer.h"
#include "tests/test_util/simulate.h"

namespace capplan::sim {

inline SimResult RunMillisecondSteps(SimConfig c, const std::vector<SimRequestSpec>& specs) {
  FakePricer p;
  p.per_prefill_token_s = p.per_decode_s = p.per_context_token_s = 0;
  SimResult out;
  for (bool ff : {false, true}) {
    c.fast_forward = ff;
    auto r = Simulate(c, specs, p);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return out;
    if (ff) {
      for (size_t i = 0; i < specs.size(); ++i) {
        EXPECT_EQ(r->requests[i].first_token_ns, out.requests[i].first_token_ns) << i;
        EXPECT_EQ(r->requests[i].finish_ns, out.requests[i].finish_ns) << i;
        EXPECT_EQ(r->requests[i].retractions, out.requests[i].retractions) << i;
      }
    } else {
      out = std::move(*r);
    }
  }
  return out;
}

}  // namespace capplan::sim

#endif  // CAPPLAN_TESTS_SIM_MILLISECOND_STEPS_H_
