// "Did you mean" suggestions for unknown names (flags, JSON keys, plug-ins,
// model cards), by edit distance, as Ninja and git do.
#ifndef CAPPLAN_COMMON_DID_YOU_MEAN_H_
#define CAPPLAN_COMMON_DID_YOU_MEAN_H_

#include <string>
#include <string_view>
#include <vector>

namespace capplan {

// Levenshtein distance, case-insensitive.
int EditDistance(std::string_view a, std::string_view b);

// The closest candidate if it is close enough to be a plausible typo
// (distance <= max(2, len/3)), else "".
std::string ClosestMatch(std::string_view name, const std::vector<std::string>& candidates);

// "; did you mean 'x'?" or, with no close match, "; known: a, b, c" (at most
// 12 names), so every unknown-name error tells the user a fix.
std::string DidYouMean(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace capplan

#endif  // CAPPLAN_COMMON_DID_YOU_MEAN_H_
