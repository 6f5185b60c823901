// How many tokens one speculative-decoding step emits per request.
//
// A step drafts k tokens (EAGLE head or MTP layers) and the target model
// verifies all k + 1 positions at once. Draft token i is kept only if tokens
// 1..i-1 were kept and the target agrees with it; the target always adds one
// token of its own (the correction, or the bonus after a fully accepted
// draft). With p_i = P(token i accepted | tokens 1..i-1 accepted):
//
//   tokens per step = 1 + A,   A = accepted draft tokens,
//   E[tokens per step] = 1 + p1 + p1*p2 + ... + p1*...*pk.
//
// Engines report the mean accept length L = E[tokens per step] (SGLang's
// "accept len", vLLM's mean acceptance length). A scenario may give either
// the per-position probabilities or L; from L the model takes one constant
// p for every position, the p in [0, 1] with 1 + p + ... + p^k = L (unique:
// the sum increases with p), solved by bisection to machine precision.
#ifndef CAPPLAN_SIM_SPECULATIVE_ACCEPTANCE_H_
#define CAPPLAN_SIM_SPECULATIVE_ACCEPTANCE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace capplan::sim::speculative {

struct AcceptanceModel {
  // p[i]: probability that draft token i + 1 is accepted given that every
  // earlier one was; size = draft tokens k.
  std::vector<double> p;

  int64_t draft_tokens() const { return static_cast<int64_t>(p.size()); }
  // 1 + p1 + p1*p2 + ... (the closed form above).
  double ExpectedTokensPerStep() const;
  // Tokens one request emits in one step, from uniforms in [0, 1) drawn by
  // `next_uniform` (one per draft position tried, in order).
  template <typename UniformFn>
  int64_t SampleTokens(UniformFn&& next_uniform) const {
    int64_t tokens = 1;
    for (double pi : p) {
      if (!(next_uniform() < pi)) break;
      ++tokens;
    }
    return tokens;
  }
};

// Speculative decoding as a deployment asks for it (scenarios/README.md,
// deployment.speculative). Off unless `method` is set.
enum class Method { kNone, kMtp, kEagle };
inline constexpr Method kMethods[] = {Method::kNone, Method::kMtp, Method::kEagle};
inline const char* MethodName(Method m) {
  return m == Method::kMtp ? "mtp" : m == Method::kEagle ? "eagle" : "none";
}

struct Spec {
  Method method = Method::kNone;
  int draft_layers = 0;        // 0: the method's default (all MTP layers; one EAGLE layer)
  AcceptanceModel acceptance;  // acceptance.draft_tokens() = k
  bool on() const { return method != Method::kNone; }
  int64_t draft_tokens() const { return on() ? acceptance.draft_tokens() : 0; }
};

// Tokens request `id` emits in the decode step that finds `generated`
// tokens already emitted: a counter-based draw from (seed, id, generated),
// so the answer does not depend on which requests share the step or in
// which order the simulator visits them (a retracted request that decodes
// the same position again draws the same count).
int64_t DrawStepTokens(const AcceptanceModel& m, uint64_t seed, int64_t id, int64_t generated);

// Per-position probabilities, each in [0, 1]; at least one. On bad input
// returns false and sets *error to a one-line reason naming the position.
bool MakeAcceptance(const std::vector<double>& p, AcceptanceModel* out, std::string* error);
// Constant p from a mean accept length L in [1, k + 1] for k >= 1 draft
// tokens; false with a one-line reason otherwise.
bool AcceptanceFromMeanLength(double mean_accept_length, int64_t draft_tokens, AcceptanceModel* out,
                              std::string* error);

}  // namespace capplan::sim::speculative

#endif  // CAPPLAN_SIM_SPECULATIVE_ACCEPTANCE_H_
