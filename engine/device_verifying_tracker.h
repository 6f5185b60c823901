// The verifying tracker whose written-page check is a verification kernel
// (kernels/attention/paged_kv.h): the CUDA backend launches
// LaunchVerifyKvIntegrity over the device tags its append kernel stamps, as
// its own batch before the step (as SGLang's KV canary verifies the slots a
// forward reads, https://github.com/sgl-project/sglang/pull/26805). The same tracker with the
// kernel's CPU reference (VerifyKvIntegrityCpu) over the host-stamped tags
// runs anywhere, so its logic is tested without a GPU.
#ifndef CAPPLAN_ENGINE_DEVICE_VERIFYING_TRACKER_H_
#define CAPPLAN_ENGINE_DEVICE_VERIFYING_TRACKER_H_

#include <functional>
#include <memory>
#include <vector>

#include "common/status.h"
#include "engine/integrity_tracker.h"
#include "kernels/attention/paged_kv.h"

namespace capplan::engine {

// Runs the verification kernel over a page table (one row per request of the
// step, seq_lens = tokens written so far) and returns every mismatch.
using PageVerifier =
    std::function<Result<std::vector<kernels::IntegrityMismatch>>(const kernels::PageTable&)>;

std::unique_ptr<IntegrityTracker> MakeDeviceVerifyingTracker(PageVerifier verify,
                                                             int32_t num_pages);
// The tracker above with VerifyKvIntegrityCpu over its own stamped tags.
std::unique_ptr<IntegrityTracker> MakeKernelReferenceTracker(int32_t num_pages, int32_t page_size);

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_DEVICE_VERIFYING_TRACKER_H_
