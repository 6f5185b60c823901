#include "common/did_you_mean.h"

#include <algorithm>
#include <cctype>

#include "common/status.h"

namespace capplan {

int EditDistance(std::string_view a, std::string_view b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string ClosestMatch(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  int best_d = 1 << 30;
  for (const auto& c : candidates) {
    const int d = EditDistance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  const int limit = std::max<int>(2, static_cast<int>(name.size()) / 3);
  return best_d <= limit ? best : std::string();
}

std::string DidYouMean(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string m = ClosestMatch(name, candidates);
  // Candidates can come from an input (a trace's header columns): they are
  // echoed escaped and cut like any other input.
  if (!m.empty()) return "; did you mean '" + EchoValue(m) + "'?";
  if (candidates.empty()) return "";
  std::string out = "; known: ";
  for (size_t i = 0; i < candidates.size() && i < 12; ++i) {
    if (i) out += ", ";
    out += EchoValue(candidates[i], 40);
  }
  if (candidates.size() > 12) out += ", ...";
  return out;
}

}  // namespace capplan
