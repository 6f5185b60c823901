// Service-level objectives for `capplan search`: "ttft_p90_ms<=2000".
// Latency metrics accept both the benchmark spelling (p90_ttft_ms, the
// summary key) and the SLO spelling (ttft_p90_ms); they are upper bounds.
// Throughput and cost metrics are accepted with the bound direction that
// makes sense for them.
#ifndef CAPPLAN_SIM_SWEEP_SLO_H_
#define CAPPLAN_SIM_SWEEP_SLO_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "schema/run_summary.h"

namespace capplan::sim::sweep {

enum class SloOp { kLe, kLt, kGe, kGt };
const char* SloOpText(SloOp op);

struct Slo {
  std::string text;    // as typed, trimmed: "ttft_p90_ms<=2000"
  std::string name;    // metric as typed: "ttft_p90_ms"
  std::string metric;  // summary key: "p90_ttft_ms"
  SloOp op = SloOp::kLe;
  double bound = 0;
  bool upper = true;  // <= or <: the metric must stay below the bound
};

// Usage errors name the flag and the fix: unknown metric (with did-you-mean),
// missing or unknown operator, bound not a finite non-negative number, a
// latency with a lower bound.
Result<Slo> ParseSlo(const std::string& text);
// Every name ParseSlo accepts (both spellings).
std::vector<std::string> KnownSloMetrics();

struct SloCheck {
  const Slo* slo = nullptr;
  double value = 0;
  bool met = false;
  // Fraction of the bound still unused (negative when violated).
  double slack = 0;
};

// Internal error when the summary lacks a metric (a simulator contract bug).
// Metrics are read by key (schema::Metric).
// `pessimistic` checks the unfavourable end of the metric's prediction
// interval (`<metric>_hi` for an upper bound, `_lo` for a lower one) where the
// summary has one.
Result<std::vector<SloCheck>> CheckSlos(const std::vector<Slo>& slos,
                                        const schema::RunSummary& summary,
                                        bool pessimistic = false);
bool AllMet(const std::vector<SloCheck>& checks);
// "ttft_p90_ms=2150 > 2000" for a violated check, "ttft_p90_ms=1800 <= 2000"
// for a met one.
std::string DescribeCheck(const SloCheck& c);

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_SLO_H_
