// Binary size units, one definition for every library: memory and KV sizes
// are reported in GiB and MiB (what nvidia-smi and the engines' logs print).
#ifndef CAPPLAN_COMMON_UNITS_H_
#define CAPPLAN_COMMON_UNITS_H_

namespace capplan {

inline constexpr double kBytesPerMiB = 1024.0 * 1024.0;
inline constexpr double kBytesPerGiB = 1024.0 * kBytesPerMiB;

}  // namespace capplan

#endif  // CAPPLAN_COMMON_UNITS_H_
