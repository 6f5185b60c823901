// A prefill/decode-disaggregated scenario: a normal scenario whose
// `deployment` is replaced by `pd` {prefill, decode, transfer}. Each pool is
// a full deployment object (scenarios/README.md), parsed by the simulator's
// own scenario parser with its phase fixed (prefill_only / decode_only), so
// every deployment knob (GPUs, parallelism, replicas, weights, KV dtype,
// scheduler) is per pool. Documented in sim/pd/README.md.
#ifndef CAPPLAN_SIM_PD_PD_SCENARIO_H_
#define CAPPLAN_SIM_PD_PD_SCENARIO_H_

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "sim/pd/kv_transfer.h"
#include "sim/scenario.h"

namespace capplan {

struct PdScenario {
  std::string origin;
  std::string name;
  std::shared_ptr<const Scenario> prefill;  // deployment.phase = prefill_only
  std::shared_ptr<const Scenario> decode;   // deployment.phase = decode_only
  KvTransferSpec transfer;
  nlohmann::json doc;
};

// True when the document declares `pd` (callers route it here instead of
// ParseScenario).
bool IsPdScenario(const nlohmann::json& doc);
Result<std::shared_ptr<const PdScenario>> ParsePdScenario(const nlohmann::json& doc,
                                                          const std::string& origin);
Result<std::shared_ptr<const PdScenario>> LoadPdScenarioFile(const std::string& path,
                                                             const std::vector<std::string>& sets);

}  // namespace capplan

#endif  // CAPPLAN_SIM_PD_PD_SCENARIO_H_
