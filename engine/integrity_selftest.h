// `capplan engine integrity-selftest`: runs one workload three times on a
// model slice and checks the verifying tracker end to end.
//
//   reference  verify tracker, no faults: any failure is a false positive.
//   faulted    verify tracker, N faults of every kind injected into running
//              requests: each fault must fail exactly its affected requests,
//              and every other request must match the reference bit for bit.
//   unguarded  no-op tracker, the same faults: how many affected requests
//              silently produced different tokens (shows the faults are real).
#ifndef CAPPLAN_ENGINE_INTEGRITY_SELFTEST_H_
#define CAPPLAN_ENGINE_INTEGRITY_SELFTEST_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "engine/batch_loop.h"
#include "engine/fault_injector.h"
#include "engine/slice_config.h"

namespace capplan::engine {

struct SelftestOptions {
  SliceConfig slice;
  std::string backend = "cpu";  // cpu | cuda (engine/backend_factory.h)
  // The verifying tracker: "backend" (the backend's own: host tags on CPU,
  // the verification kernel on CUDA) or "kernel_reference" (the CUDA
  // backend's tracker with the kernel's CPU reference, for tests here).
  std::string verify_impl = "backend";
  int faults_per_kind = 3;
  uint64_t seed = 1;
  int32_t page_size = 4;  // small pages: many pages per request to hit
};

struct SelftestReport {
  std::string backend = "cpu";
  std::string slice;
  int requests = 0;
  int injected = 0;
  int detected = 0;
  int false_positives = 0;
  int unaffected_ok = 0;
  int unaffected_total = 0;
  int affected_total = 0;
  int corrupted_without_verify = 0;  // unguarded run: affected outputs that changed
  int affected_without_verify = 0;   // unguarded run: requests its faults touched
  std::map<std::string, int> injected_by_kind, detected_by_kind;
  std::vector<std::string> failures;  // error messages of failed requests (faulted run)
  bool Passed() const {
    return injected > 0 && detected == injected && false_positives == 0 &&
           unaffected_ok == unaffected_total;
  }
  nlohmann::json ToJson() const;
};

// Deterministic synthetic requests: prompts of varied length, greedy outputs.
std::vector<EngineRequest> SyntheticRequests(int count, int min_prompt, int max_prompt,
                                             int output_len, int vocab, uint64_t seed);

Result<SelftestReport> RunIntegritySelftest(const SelftestOptions& options);

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_INTEGRITY_SELFTEST_H_
