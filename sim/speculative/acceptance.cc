#include "sim/speculative/acceptance.h"

#include <cmath>

namespace capplan::sim::speculative {

double AcceptanceModel::ExpectedTokensPerStep() const {
  double expected = 1;
  double run = 1;  // probability that every draft token so far was accepted
  for (double pi : p) {
    run *= pi;
    expected += run;
  }
  return expected;
}

namespace {

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

int64_t DrawStepTokens(const AcceptanceModel& m, uint64_t seed, int64_t id, int64_t generated) {
  uint64_t state = seed ^ (static_cast<uint64_t>(id) * 0xD1B54A32D192ED03ull);
  state ^= static_cast<uint64_t>(generated) * 0xA24BAED4963EE407ull;
  // 53 random bits -> a uniform double in [0, 1).
  return m.SampleTokens([&state] { return (SplitMix64(&state) >> 11) * 0x1.0p-53; });
}

bool MakeAcceptance(const std::vector<double>& p, AcceptanceModel* out, std::string* error) {
  if (p.empty()) {
    *error = "needs at least one acceptance probability (one per draft token)";
    return false;
  }
  for (size_t i = 0; i < p.size(); ++i) {
    if (!std::isfinite(p[i]) || p[i] < 0 || p[i] > 1) {
      *error = "acceptance probability at position " + std::to_string(i) + " must be in [0, 1]";
      return false;
    }
  }
  out->p = p;
  return true;
}

bool AcceptanceFromMeanLength(double mean_accept_length, int64_t draft_tokens, AcceptanceModel* out,
                              std::string* error) {
  if (draft_tokens < 1) {
    *error = "draft_tokens must be >= 1";
    return false;
  }
  const double max_len = static_cast<double>(draft_tokens) + 1;
  if (!std::isfinite(mean_accept_length) || mean_accept_length < 1 ||
      mean_accept_length > max_len) {
    *error = "mean accept length must be in [1, draft_tokens + 1] = [1, " +
             std::to_string(draft_tokens + 1) + "]";
    return false;
  }
  AcceptanceModel m;
  m.p.assign(static_cast<size_t>(draft_tokens), 0.0);
  double lo = 0, hi = 1;
  // 200 halvings reach the double resolution of [0, 1] long before the end.
  for (int it = 0; it < 200 && lo < hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (mid == lo || mid == hi) break;
    std::fill(m.p.begin(), m.p.end(), mid);
    (m.ExpectedTokensPerStep() < mean_accept_length ? lo : hi) = mid;
  }
  std::fill(m.p.begin(), m.p.end(), mean_accept_length >= max_len ? 1.0 : lo);
  *out = std::move(m);
  return true;
}

}  // namespace capplan::sim::speculative
