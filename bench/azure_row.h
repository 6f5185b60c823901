// One row of an Azure LLM inference trace (2023 format: TIMESTAMP,
// ContextTokens, GeneratedTokens) for the benchmarks' synthetic traces.
#ifndef CAPPLAN_BENCH_AZURE_ROW_H_
#define CAPPLAN_BENCH_AZURE_ROW_H_

#include <cstdint>
#include <cstdio>
#include <ostream>

namespace capplan {

// `t_100ns` after midnight of 2023-11-16, in 100 ns units (the format's
// 7 fraction digits); within one day.
inline void WriteAzureRow(std::ostream& out, int64_t t_100ns, int64_t in, int64_t gen) {
  const int64_t s = t_100ns / 10'000'000, frac = t_100ns % 10'000'000;
  char buf[96];
  std::snprintf(buf, sizeof buf, "2023-11-16 %02lld:%02lld:%02lld.%07lld,%lld,%lld\n",
                static_cast<long long>(s / 3600 % 24), static_cast<long long>(s / 60 % 60),
                static_cast<long long>(s % 60), static_cast<long long>(frac),
                static_cast<long long>(in), static_cast<long long>(gen));
  out << buf;
}

}  // namespace capplan

#endif  // CAPPLAN_BENCH_AZURE_ROW_H_
