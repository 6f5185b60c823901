#include "sim/request_csv.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ostream>

namespace capplan::sim {

namespace {

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

char* PutInt(char* p, int64_t v) { return std::to_chars(p, p + 20, v).ptr; }
// printf's %.9g, the general-format path: std::to_chars with a precision
// (or snprintf) costs ~90 ns a number, most of a 1M-request file's time.
// The WebAssembly build's libc++ has no floating-point to_chars; it takes
// printf itself.
char* PutG9Slow(char* p, double v) {
#if defined(__cpp_lib_to_chars)
  return std::to_chars(p, p + 24, v, std::chars_format::general, 9).ptr;
#else
  return p + std::snprintf(p, 24, "%.9g", v);
#endif
}

// 10^(i-4), the bounds of each exponent (their nearest doubles; the one
// just under an inexact 10^-k still rounds to its 9 digits), and 10^i for
// the scaling, exact.
constexpr double kPow10[] = {1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8};
constexpr double kScale[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12};
// 10^i, exact.
constexpr auto kPow10Int = [] {
  std::array<uint64_t, 16> p{};
  p[0] = 1;
  for (size_t i = 1; i < p.size(); ++i) p[i] = p[i - 1] * 10;
  return p;
}();

// What PutFixed9 may write past the number it writes.
constexpr size_t kSlackBytes = 16;

// "00" to "99": two digits a division.
constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

void PutPair(char* d, uint64_t v) {
  d[0] = kDigitPairs[2 * v];
  d[1] = kDigitPairs[2 * v + 1];
}

// The 9 decimal digits of x < 10^9, leading zeros included: three short
// chains of divisions instead of one of nine.
void NineDigits(uint64_t x, char* d) {
  const uint64_t hi = x / 10000, lo = x % 10000;  // 5 and 4 digits
  d[0] = static_cast<char>('0' + hi / 10000);
  PutPair(d + 1, hi / 100 % 100);
  PutPair(d + 3, hi % 100);
  PutPair(d + 5, lo / 100);
  PutPair(d + 7, lo % 100);
}

// %.9g's fixed notation of `digits` (9 of them, the first not zero) times
// 10^(e - 8), trailing zeros of the fraction dropped. Digits are moved 16
// bytes at a time, so up to kSlackBytes past the number may be written.
char* PutFixed9(char* p, uint64_t digits, int e, bool negative) {
  char d[16] = {};
  NineDigits(digits, d);
  int last = 8;
  while (last > e && last > 0 && d[last] == '0') --last;
  if (negative) *p++ = '-';
  if (e < 0) {
    std::memcpy(p, "0.000000", 8);  // e >= -4: "0." and -e - 1 zeros
    p += 1 - e;
    std::memcpy(p, d, 16);
    return p + last + 1;
  }
  std::memcpy(p, d, 16);
  if (last <= e) return p + e + 1;
  std::memcpy(p + e + 2, d + e + 1, 8);
  p[e + 1] = '.';
  return p + last + 2;
}

// %.9g for the numbers a row holds (1e-4 <= |v| < 1e9: fixed notation):
// v scaled by an exact power of ten to 9 integer digits takes one rounding
// (under 1e-7 absolute), so its nearest integer is %.9g's digits unless the
// fraction is that close to one half; those, zero, and what %.9g writes in
// exponent form go the general way.
char* PutMs(char* p, double v) {
  const double a = std::fabs(v);
  if (!(a >= 1e-4 && a < 1e9)) return PutG9Slow(p, v);
  int e = 8;  // 10^e <= a < 10^(e+1)
  while (e > -4 && a < kPow10[e + 4]) --e;
  const double s = a * kScale[8 - e];  // in [1e8, 1e9]
  const uint64_t whole = static_cast<uint64_t>(s);
  const double frac = s - static_cast<double>(whole);
  if (std::fabs(frac - 0.5) < 1e-6) return PutG9Slow(p, v);
  uint64_t digits = whole + (frac > 0.5 ? 1 : 0);
  if (digits == 1'000'000'000) {
    digits = 100'000'000;
    if (++e == 9) return PutG9Slow(p, v);
  }
  return PutFixed9(p, digits, e, v < 0);
}

// Ms(ns) as PutMs writes it, from the integer. The double ns / 1e6 is
// within 2^-53 of its decimal value, under a nanosecond while |ns| < 2^53,
// and a 9-digit rounding boundary of a time of 10 or more digits in ns
// lies on a whole nanosecond: the double's 9 digits round as the
// integer's do, unless the integer is on the boundary (a tie, which the
// double decides: PutMs). Times of at most 9 digits in ns are exact.
char* PutNsAsMs(char* p, int64_t ns) {
  const uint64_t a = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  // Fixed notation (1e-4 <= ms < 1e9), zero and small values aside.
  if (a < 100 || a >= kPow10Int[15]) return PutMs(p, Ms(ns));
  // Its digits: 3 to 15.
  const int bits = std::bit_width(a);
  int n = (bits * 1233) >> 12;  // floor(log10(2^bits)), at most one short
  n += a >= kPow10Int[n] ? 1 : 0;
  uint64_t digits = 0;
  if (n > 9) {
    const uint64_t unit = kPow10Int[n - 9];
    digits = a / unit;
    const uint64_t rest = a % unit, half = unit / 2;
    if (rest == half) return PutMs(p, Ms(ns));
    if (rest > half) ++digits;
  } else {
    digits = a * kPow10Int[9 - n];
  }
  int e = n - 7;  // 10^e <= ms < 10^(e+1)
  if (digits == 1'000'000'000) {
    digits = 100'000'000;
    if (++e == 9) return PutMs(p, Ms(ns));
  }
  return PutFixed9(p, digits, e, ns < 0);
}

char* PutComma(char* p) {
  *p = ',';
  return p + 1;
}

}  // namespace

const char kRequestsCsvHeader[] =
    "id,replica,rank,arrival_ms,first_token_ms,finish_ms,input_tokens,output_tokens,"
    "ttft_ms,tpot_ms,e2el_ms,retractions,warmup,status\n";

RequestRow RowOf(const ReqState& r) {
  return {.id = r.id,
          .arrival_ns = r.arrival_ns,
          .first_token_ns = r.first_token_ns,
          .finish_ns = r.finish_ns,
          .input = r.input,
          .generated = r.generated,
          .instance = r.instance,
          .rank = r.rank,
          .retractions = r.retractions,
          .done = r.status == ReqStatus::kDone,
          .warmup = r.warmup};
}

void AppendRequestRow(std::string* out, const RequestRow& r) {
  const bool ok = r.done;
  const int64_t ttft_ns = ok ? r.first_token_ns - r.arrival_ns : 0;
  const int64_t e2el_ns = ok ? r.finish_ns - r.arrival_ns : 0;
  const double tpot = ok && r.generated > 1 ? (Ms(e2el_ns) - Ms(ttft_ns)) / (r.generated - 1) : 0;
  char row[kMaxRequestRowBytes + kSlackBytes];
  char* p = PutComma(PutInt(row, r.id));
  p = PutComma(PutInt(p, r.instance));
  p = PutComma(PutInt(p, r.rank));
  p = PutComma(PutNsAsMs(p, r.arrival_ns));
  p = PutComma(r.first_token_ns >= 0 ? PutNsAsMs(p, r.first_token_ns) : PutMs(p, -1));
  p = PutComma(PutNsAsMs(p, r.finish_ns));
  p = PutComma(PutInt(p, r.input));
  p = PutComma(PutInt(p, r.generated));
  p = PutComma(PutNsAsMs(p, ttft_ns));
  p = PutComma(PutMs(p, tpot));
  p = PutComma(PutNsAsMs(p, e2el_ns));
  p = PutComma(PutInt(p, r.retractions));
  p = PutComma(PutInt(p, r.warmup ? 1 : 0));
  out->append(row, p);
  out->append(ok ? "completed\n" : "failed\n");
}

void AppendRequestRow(std::string* out, const ReqState& r) { AppendRequestRow(out, RowOf(r)); }

void AppendCsvInt(std::string* out, int64_t v) {
  char buf[24];
  out->append(buf, PutInt(buf, v));
}

void AppendCsvMs(std::string* out, double ms) {
  char buf[32];
  out->append(buf, PutMs(buf, ms));
}

void WriteRequestRow(std::ostream& os, const ReqState& r) {
  std::string row;
  AppendRequestRow(&row, r);
  os << row;
}

}  // namespace capplan::sim
