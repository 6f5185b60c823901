// Rendering of `capplan capacity` results (text and JSON), shared by the
// single-configuration view and the --table view.
#ifndef CAPPLAN_MODELS_CAPACITY_REPORT_H_
#define CAPPLAN_MODELS_CAPACITY_REPORT_H_

#include <iosfwd>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/cli.h"
#include "common/status.h"
#include "models/card.h"
#include "models/memory.h"

namespace capplan::models {

// Everything one capacity question needs besides the card.
struct CapacityQuery {
  std::string hardware_name;
  // Owns the profile `device` points at, so copies of the query keep it.
  std::shared_ptr<const hw::HardwareProfile> hardware;
  DeviceMemory device;
  ParallelLayout layout;
  PrecisionChoice precision;
  EngineMemoryOptions engine;
  int64_t context_tokens = 0;
};

std::string FormatGib(double bytes);
nlohmann::json PlanToJson(const ModelCard& card, const CapacityQuery& q, const MemoryPlan& p);
// The memory terms with a range that change this plan's KV pool, each with
// the pool at its two ends (`capacity --explain --json`).
nlohmann::json KvRangeTermsToJson(const MemoryPlan& p);
// `explain` adds each memory term's rule and source on a line of its own,
// and each ranged term's effect on the KV pool.
void PrintPlanText(const ModelCard& card, const CapacityQuery& q, const MemoryPlan& p,
                   bool explain, std::ostream& out);

// One row per shipped card x {bf16, fp8} KV; configurations that cannot run
// show why instead of failing the table.
Status RunCapacityTable(const CapacityQuery& q, bool json, CommandContext& ctx);

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_CAPACITY_REPORT_H_
