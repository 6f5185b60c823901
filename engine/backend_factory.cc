#include "engine/backend_factory.h"

#include "common/did_you_mean.h"
#include "engine/cpu_backend.h"
#ifdef CAPPLAN_HAVE_CUDA
#include "engine/cuda_backend.h"
#endif

namespace capplan::engine {

const std::vector<std::string>& EngineBackendNames() {
  static const std::vector<std::string> kNames = {"cpu", "cuda"};
  return kNames;
}

bool CudaBackendBuilt() {
#ifdef CAPPLAN_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

Result<std::unique_ptr<EngineBackend>> MakeEngineBackend(const SliceConfig& slice,
                                                         const BackendOptions& o) {
  if (o.name == "cpu") {
    CAPPLAN_ASSIGN_OR_RETURN(auto b, CpuBackend::Create(slice, o.num_pages, o.page_size));
    return std::unique_ptr<EngineBackend>(std::move(b));
  }
  if (o.name == "cuda") {
#ifdef CAPPLAN_HAVE_CUDA
    CudaBackendOptions co;
    co.max_step_tokens = o.max_step_tokens;
    co.batch_invariant = o.batch_invariant;
    CAPPLAN_ASSIGN_OR_RETURN(auto b, CudaBackend::Create(slice, o.num_pages, o.page_size, co));
    return std::unique_ptr<EngineBackend>(std::move(b));
#else
    return Status::Unavailable(
        "no CUDA device: use --backend cpu (this capplan was built without CUDA)");
#endif
  }
  return Status::Usage("--backend: unknown backend '" + o.name + "'" +
                       DidYouMean(o.name, EngineBackendNames()) + " (use cpu or cuda)");
}

}  // namespace capplan::engine
