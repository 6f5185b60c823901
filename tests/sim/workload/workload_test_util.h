// Test helper: parse a workload object from JSON text.
#ifndef CAPPLAN_TESTS_SIM_WORKLOAD_WORKLOAD_TEST_UTIL_H_
#define CAPPLAN_TESTS_SIM_WORKLOAD_WORKLOAD_TEST_UTIL_H_

#include <string>

#include "common/data_path.h"
#include "sim/workload/workload.h"

namespace capplan::sim {

// Scenario dir defaults to the shipped scenarios/ folder so relative trace
// paths like "traces/mooncake_sample.jsonl" resolve.
inline Result<Workload> LoadFromText(const std::string& text,
                                     const std::string& dir = DataPath("scenarios")) {
  const nlohmann::json doc = nlohmann::json::parse(text);
  JsonObject o(doc, "scenario.json", "/workload");
  return LoadWorkload(o, dir);
}

}  // namespace capplan::sim

#endif  // CAPPLAN_TESTS_SIM_WORKLOAD_WORKLOAD_TEST_UTIL_H_
