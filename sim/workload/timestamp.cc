#include "sim/workload/timestamp.h"

#include <limits>

namespace capplan::sim {

namespace {

constexpr int64_t kNsPerSecond = 1'000'000'000;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Reads exactly `n` digits at *pos.
bool ReadFixed(std::string_view s, size_t* pos, int n, int64_t* out) {
  if (*pos + n > s.size()) return false;
  int64_t v = 0;
  for (int i = 0; i < n; ++i) {
    const char c = s[*pos + i];
    if (!IsDigit(c)) return false;
    v = v * 10 + (c - '0');
  }
  *pos += n;
  *out = v;
  return true;
}

bool Expect(std::string_view s, size_t* pos, char c) {
  if (*pos >= s.size() || s[*pos] != c) return false;
  ++*pos;
  return true;
}

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned DaysInMonth(int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

Status Bad(std::string_view text, const char* why) {
  return Status::Usage("bad timestamp '" + EchoValue(text) + "' (" + why +
                       "; expected YYYY-MM-DD HH:MM:SS[.fraction][+HH:MM])");
}

}  // namespace

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;                                    // [0, 399]
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;  // [0, 365]
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;            // [0, 146096]
  return era * 146097 + doe - 719468;
}

Result<int64_t> ParseCivilTimeNs(std::string_view text) {
  size_t pos = 0;
  int64_t y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!ReadFixed(text, &pos, 4, &y) || !Expect(text, &pos, '-') || !ReadFixed(text, &pos, 2, &mo) ||
      !Expect(text, &pos, '-') || !ReadFixed(text, &pos, 2, &d)) {
    return Bad(text, "date");
  }
  if (pos >= text.size() || (text[pos] != ' ' && text[pos] != 'T')) return Bad(text, "separator");
  ++pos;
  if (!ReadFixed(text, &pos, 2, &h) || !Expect(text, &pos, ':') || !ReadFixed(text, &pos, 2, &mi) ||
      !Expect(text, &pos, ':') || !ReadFixed(text, &pos, 2, &s)) {
    return Bad(text, "time of day");
  }
  if (mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, static_cast<unsigned>(mo))) {
    return Bad(text, "no such date");
  }
  if (h > 23 || mi > 59 || s > 59) return Bad(text, "no such time of day");
  int64_t frac_ns = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    int64_t scale = kNsPerSecond;
    while (pos < text.size() && IsDigit(text[pos])) {
      if (digits < 9) {
        scale /= 10;
        frac_ns += (text[pos] - '0') * scale;
      }
      ++digits;
      ++pos;
    }
    if (digits == 0) return Bad(text, "empty fraction");
  }
  int64_t offset_s = 0;
  if (pos < text.size()) {
    const char c = text[pos];
    if (c == 'Z') {
      ++pos;
    } else if (c == '+' || c == '-') {
      ++pos;
      int64_t oh = 0, om = 0;
      if (!ReadFixed(text, &pos, 2, &oh)) return Bad(text, "UTC offset");
      if (pos < text.size() && text[pos] == ':') ++pos;
      if (!ReadFixed(text, &pos, 2, &om) || oh > 23 || om > 59) return Bad(text, "UTC offset");
      offset_s = (oh * 3600 + om * 60) * (c == '-' ? -1 : 1);
    }
    if (pos != text.size()) return Bad(text, "trailing characters");
  }
  const int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  // Local time = UTC + offset, so UTC = local - offset.
  const int64_t secs = days * 86400 + h * 3600 + mi * 60 + s - offset_s;
  int64_t ns = 0;
  if (__builtin_mul_overflow(secs, kNsPerSecond, &ns) || __builtin_add_overflow(ns, frac_ns, &ns)) {
    return Bad(text, "outside 1677-09-21..2262-04-11 UTC, the range of int64 nanoseconds");
  }
  return ns;
}

Result<int64_t> ParseDecimalNs(std::string_view text, int ns_per_unit_digits) {
  size_t pos = 0;
  int64_t whole = 0;
  int whole_digits = 0;
  while (pos < text.size() && IsDigit(text[pos])) {
    if (__builtin_mul_overflow(whole, 10, &whole) ||
        __builtin_add_overflow(whole, text[pos] - '0', &whole)) {
      return Status::Usage("number '" + EchoValue(text) + "' is too large");
    }
    ++whole_digits;
    ++pos;
  }
  int64_t unit = 1;
  for (int i = 0; i < ns_per_unit_digits; ++i) unit *= 10;
  int64_t frac = 0;
  int frac_digits = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int64_t scale = unit;
    while (pos < text.size() && IsDigit(text[pos])) {
      if (scale > 1) {
        scale /= 10;
        frac += (text[pos] - '0') * scale;
      }
      ++frac_digits;
      ++pos;
    }
  }
  if (pos != text.size() || whole_digits + frac_digits == 0) {
    return Status::Usage("expected a non-negative decimal number, got '" + EchoValue(text) + "'");
  }
  int64_t ns = 0;
  if (__builtin_mul_overflow(whole, unit, &ns) || __builtin_add_overflow(ns, frac, &ns)) {
    return Status::Usage("number '" + EchoValue(text) + "' is too large");
  }
  return ns;
}

}  // namespace capplan::sim
