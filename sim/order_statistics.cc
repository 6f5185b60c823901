#include "sim/order_statistics.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace capplan::sim {

namespace {

// Radix digits of 16 bits, most significant first: a digit's histogram
// (256 KB) stays in the L2 cache.
constexpr int kDigitBits = 16;
constexpr size_t kDigits = size_t{1} << kDigitBits;
// Below this many values a selection over a copy is cheaper than another
// histogram pass.
constexpr size_t kSmall = 4096;

// The double's bits as an unsigned key that orders as the doubles do
// (negatives flipped whole, positives with the sign bit set).
uint64_t Key(double x) {
  uint64_t b;  // std::bit_cast, which emscripten's libc++ lacks
  std::memcpy(&b, &x, sizeof b);
  return (b >> 63) != 0 ? ~b : b | (uint64_t{1} << 63);
}

size_t DigitOf(double x, int shift) {
  return static_cast<size_t>((Key(x) >> shift) & (kDigits - 1));
}

struct Want {
  size_t rank;  // within the values being looked at
  size_t slot;  // where its value goes in `out`
};

// Selection over a copy: each rank placed in rising order, the next one
// looked for only past the last (nothing smaller is left after it).
void SelectSmall(std::span<const double> v, std::vector<Want>& want, std::span<double> out) {
  std::vector<double> w(v.begin(), v.end());
  std::sort(want.begin(), want.end(), [](const Want& a, const Want& b) { return a.rank < b.rank; });
  size_t from = 0;
  for (const Want& q : want) {
    std::nth_element(w.begin() + static_cast<std::ptrdiff_t>(from),
                     w.begin() + static_cast<std::ptrdiff_t>(q.rank), w.end());
    from = q.rank;
    out[q.slot] = w[q.rank];
  }
}

// The values sharing the key bits above `shift` + 16: by the digit below
// them, counted, then the values of each digit holding a wanted rank
// gathered and looked at the same way one digit further down.
void Select(std::span<const double> v, std::vector<Want>& want, int shift,
            std::span<double> out) {
  if (v.size() <= kSmall || shift < 0) {
    SelectSmall(v, want, out);
    return;
  }
  std::vector<uint32_t> count(kDigits, 0);
  for (double x : v) ++count[DigitOf(x, shift)];
  std::vector<size_t> start(kDigits);
  size_t seen = 0;
  for (size_t d = 0; d < kDigits; ++d) start[d] = seen, seen += count[d];
  // Each wanted rank's digit (the last one starting at or before it) and
  // its rank among that digit's values; part[d]: d's index in `digits`.
  std::vector<size_t> digits;
  std::vector<int> part(kDigits, -1);
  std::vector<std::vector<Want>> wants;
  for (const Want& q : want) {
    const size_t d = static_cast<size_t>(
        std::upper_bound(start.begin(), start.end(), q.rank) - start.begin() - 1);
    if (part[d] < 0) {
      part[d] = static_cast<int>(digits.size());
      digits.push_back(d);
      wants.emplace_back();
    }
    wants[static_cast<size_t>(part[d])].push_back({q.rank - start[d], q.slot});
  }
  std::vector<std::vector<double>> parts(digits.size());
  for (size_t i = 0; i < digits.size(); ++i) parts[i].reserve(count[digits[i]]);
  for (double x : v) {
    if (const int p = part[DigitOf(x, shift)]; p >= 0) parts[static_cast<size_t>(p)].push_back(x);
  }
  for (size_t i = 0; i < digits.size(); ++i) Select(parts[i], wants[i], shift - kDigitBits, out);
}

}  // namespace

void OrderStatistics(std::span<const double> v, std::span<const size_t> ranks,
                     std::span<double> out) {
  if (v.empty() || ranks.empty()) return;
  std::vector<Want> want;
  want.reserve(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) want.push_back({ranks[i], i});
  Select(v, want, 64 - kDigitBits, out);
}

}  // namespace capplan::sim
