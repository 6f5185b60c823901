// Numbers as calibration writes them: a value to N significant digits for
// reports, and fitted values rounded for the shipped profiles.
#ifndef CAPPLAN_CALIBRATE_SIG_DIGITS_H_
#define CAPPLAN_CALIBRATE_SIG_DIGITS_H_

#include <cstdio>
#include <cstdlib>
#include <string>

namespace capplan::calibrate {

// printf's "%.<digits>g".
inline std::string SigDigits(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.*g", digits, v);
  return b;
}

// Fitted values are written to 4 significant digits: more would only carry
// floating-point noise into the shipped files, which a test regenerates.
inline double RoundFitted(double v) { return std::strtod(SigDigits(v, 4).c_str(), nullptr); }

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_SIG_DIGITS_H_
