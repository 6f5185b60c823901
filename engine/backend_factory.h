// Picks the engine backend by name: "cpu" always, "cuda" when the binary was
// built with CUDA and a device is present. Never falls back silently: asking
// for cuda without one is the Unavailable error "no CUDA device: use
// --backend cpu" (exit 1).
#ifndef CAPPLAN_ENGINE_BACKEND_FACTORY_H_
#define CAPPLAN_ENGINE_BACKEND_FACTORY_H_

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "engine/backend.h"
#include "engine/slice_config.h"

namespace capplan::engine {

struct BackendOptions {
  std::string name = "cpu";  // cpu | cuda
  int32_t num_pages = 1024;
  int32_t page_size = 16;
  int64_t max_step_tokens = 8192 + 64;  // chunked prefill budget + running decodes
  // CUDA: fix split-K / split-KV to 1 (see cuda_backend.h). The CPU backend
  // is always batch-invariant.
  bool batch_invariant = true;
};

const std::vector<std::string>& EngineBackendNames();
// True when this binary has the CUDA backend compiled in.
bool CudaBackendBuilt();

Result<std::unique_ptr<EngineBackend>> MakeEngineBackend(const SliceConfig& slice,
                                                         const BackendOptions& options);

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_BACKEND_FACTORY_H_
