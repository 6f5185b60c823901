// Fault injection for tests and `capplan engine integrity-selftest`: each
// kind reproduces a class of real cross-request KV bug: pages freed while
// still in flight (https://github.com/sgl-project/sglang/pull/18803,
// https://github.com/vllm-project/vllm/pull/45357), pages freed while a page
// table still mapped them (https://github.com/sgl-project/sglang/issues/38319).
//
//   mis_map      one page-table entry points at a page the request never
//                wrote (another request's page, a free page, or poison).
//   swap         two requests' page-table entries are exchanged.
//   stale_reuse  a page still mapped by a live request is handed to another
//                request without bumping its epoch (freed while in flight).
//
// Faults only touch pages that already hold data, so the corruption is real
// (a no-op tracker lets it through and the output changes) and a verifying
// tracker sees it before any kernel reads or overwrites the page.
#ifndef CAPPLAN_ENGINE_FAULT_INJECTOR_H_
#define CAPPLAN_ENGINE_FAULT_INJECTOR_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "engine/integrity_tracker.h"
#include "engine/kv_page_manager.h"
#include "engine/splitmix.h"

namespace capplan::engine {

enum class FaultKind { kMisMap, kSwap, kStaleReuse };
const char* FaultKindName(FaultKind k);  // "mis_map", "swap", "stale_reuse"
const std::vector<FaultKind>& AllFaultKinds();

struct InjectedFault {
  FaultKind kind = FaultKind::kMisMap;
  std::vector<int64_t> affected;  // requests whose KV reads are now wrong
  std::string description;
};

// Injects one fault among `candidates` (requests that will run in the next
// step, with the tokens they have written), skipping `exclude`. Returns
// NotFound when no eligible request (or pair) exists.
Result<InjectedFault> InjectFault(FaultKind kind, KvPageManager* kv,
                                  const std::vector<VerifyItem>& candidates,
                                  const std::set<int64_t>& exclude, uint64_t* rng);

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_FAULT_INJECTOR_H_
