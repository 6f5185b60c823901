// cuBLASLt wrappers for the BF16 and FP8 per-tensor GEMMs (see gemm_cuda.h).
// Cost per call (DenseGemmCost, gemm_cost.h): 2*m*n*k FLOPs; bytes = weights
// n*k*{2 BF16, 1 FP8} (+4 B scale) + activations m*k*{2, 1} (+4 B) + output
// m*n*2 (BF16). BF16 runs at the 989 TFLOPS dense rate, FP8 at 1979.
//
// libcublasLt is opened on the first CublasLtGemm::Create(), not linked:
// loading it costs every process ~80 ms and ~200 MB of resident memory,
// which the capplan commands that never touch a GPU (nearly all) should
// not pay.
#include <cublasLt.h>
#include <dlfcn.h>

#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "kernels/gemm/gemm_cuda.h"

namespace capplan::kernels {
namespace {

// 32 MiB: the workspace cuBLAS documents as recommended for Hopper
// (cuBLAS docs, cublasSetWorkspace()).
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// The cuBLASLt entry points this file calls (cublasLt<Name>), each typed
// from cublasLt.h.
// clang-format off
#define CAPPLAN_LT_ENTRY_POINTS(X)                                          \
  X(Create) X(Destroy) X(Matmul) X(MatmulAlgoGetHeuristic)                  \
  X(MatmulDescCreate) X(MatmulDescDestroy) X(MatmulDescSetAttribute)        \
  X(MatmulPreferenceCreate) X(MatmulPreferenceDestroy)                      \
  X(MatmulPreferenceSetAttribute) X(MatrixLayoutCreate)                     \
  X(MatrixLayoutDestroy)
// clang-format on

struct LtApi {
#define CAPPLAN_LT_FIELD(name) decltype(&cublasLt##name) name = nullptr;
  CAPPLAN_LT_ENTRY_POINTS(CAPPLAN_LT_FIELD)
#undef CAPPLAN_LT_FIELD
};

LtApi lt;  // filled once by LoadLt(); read only after it succeeded

// Opens the toolkit's libcublasLt by soname, then from the toolkit's
// library folder (both from the build's CUDA toolkit).
Status LoadLt() {
  static std::once_flag once;
  static Status status;
  std::call_once(once, [] {
    void* lib = dlopen(CAPPLAN_CUBLASLT_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) lib = dlopen(CAPPLAN_CUBLASLT_PATH, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      status = Status::Unavailable(std::string("cannot open ") + CAPPLAN_CUBLASLT_SONAME + " (" +
                                   dlerror() + "); install the CUDA toolkit's cuBLAS");
      return;
    }
    bool ok = true;
#define CAPPLAN_LT_BIND(name)                                                  \
  lt.name = reinterpret_cast<decltype(lt.name)>(dlsym(lib, "cublasLt" #name)); \
  ok = ok && lt.name != nullptr;
    CAPPLAN_LT_ENTRY_POINTS(CAPPLAN_LT_BIND)
#undef CAPPLAN_LT_BIND
    if (!ok) {
      status = Status::Unavailable(std::string(CAPPLAN_CUBLASLT_SONAME) +
                                   " lacks a cuBLASLt entry point this build calls");
    }
  });
  return status;
}

Status LtError(const char* what, cublasStatus_t s) {
  return Status::Internal(std::string(what) + ": cuBLASLt status " +
                          std::to_string(static_cast<int>(s)));
}

#define CAPPLAN_LT(call)                                        \
  do {                                                          \
    cublasStatus_t _s = (call);                                 \
    if (_s != CUBLAS_STATUS_SUCCESS) return LtError(#call, _s); \
  } while (0)

// Descriptors and the chosen algorithm for one (type, m, n, k): built once
// so the heuristic query stays out of timed launches.
struct LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~LtPlan() {
    if (c) lt.MatrixLayoutDestroy(c);
    if (b) lt.MatrixLayoutDestroy(b);
    if (a) lt.MatrixLayoutDestroy(a);
    if (op) lt.MatmulDescDestroy(op);
  }
};

}  // namespace

struct CublasLtGemm::Impl {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  std::map<std::tuple<int, int, int, int>, std::unique_ptr<LtPlan>> plans;
  ~Impl() {
    plans.clear();
    if (workspace) cudaFree(workspace);
    if (handle) lt.Destroy(handle);
  }

  // Row-major y[M,N] = x[M,K] W[N,K]^T is column-major y'[N,M] = op(A) B
  // with A = W seen as [K, N] (ld K) transposed, B = x as [K, M] (ld K),
  // C = y as [N, M] (ld N). This "TN" form is the one cuBLASLt accepts for
  // FP8 on Hopper; scales apply to A (weights) and B (activations).
  Result<LtPlan*> Plan(cudaDataType_t ab, bool scaled, int m, int n, int k) {
    auto key = std::make_tuple(static_cast<int>(ab), m, n, k);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second.get();
    auto p = std::make_unique<LtPlan>();
    CAPPLAN_LT(lt.MatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CAPPLAN_LT(lt.MatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    CAPPLAN_LT(lt.MatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    if (scaled) {
      // Placeholder pointers so the heuristic sees a scaled GEMM; the real
      // ones are set per call.
      const float* dummy = static_cast<const float*>(workspace);
      CAPPLAN_LT(lt.MatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &dummy,
                                           sizeof(dummy)));
      CAPPLAN_LT(lt.MatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &dummy,
                                           sizeof(dummy)));
    }
    CAPPLAN_LT(lt.MatrixLayoutCreate(&p->a, ab, k, n, k));
    CAPPLAN_LT(lt.MatrixLayoutCreate(&p->b, ab, k, m, k));
    CAPPLAN_LT(lt.MatrixLayoutCreate(&p->c, CUDA_R_16BF, n, m, n));
    cublasLtMatmulPreference_t pref = nullptr;
    CAPPLAN_LT(lt.MatmulPreferenceCreate(&pref));
    size_t ws = kWorkspaceBytes;
    cublasStatus_t st = lt.MatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    cublasLtMatmulHeuristicResult_t heur{};
    int found = 0;
    if (st == CUBLAS_STATUS_SUCCESS) {
      st = lt.MatmulAlgoGetHeuristic(handle, p->op, p->a, p->b, p->c, p->c, pref, 1, &heur, &found);
    }
    lt.MatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS) return LtError("cublasLtMatmulAlgoGetHeuristic", st);
    if (found == 0) {
      return Status::Unavailable("cuBLASLt has no algorithm for m=" + std::to_string(m) +
                                 " n=" + std::to_string(n) + " k=" + std::to_string(k));
    }
    p->algo = heur.algo;
    LtPlan* raw = p.get();
    plans.emplace(key, std::move(p));
    return raw;
  }

  Status Run(cudaDataType_t ab, const void* x, const void* w, const float* x_scale,
             const float* w_scale, void* y, int m, int n, int k, cudaStream_t stream) {
    const bool scaled = x_scale != nullptr;
    CAPPLAN_ASSIGN_OR_RETURN(LtPlan * p, Plan(ab, scaled, m, n, k));
    if (scaled) {
      CAPPLAN_LT(lt.MatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale,
                                           sizeof(w_scale)));
      CAPPLAN_LT(lt.MatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scale,
                                           sizeof(x_scale)));
    }
    const float alpha = 1.0f, beta = 0.0f;
    CAPPLAN_LT(lt.Matmul(handle, p->op, &alpha, w, p->a, x, p->b, &beta, y, p->c, y, p->c, &p->algo,
                         workspace, kWorkspaceBytes, stream));
    return Status::Ok();
  }
};

CublasLtGemm::CublasLtGemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CublasLtGemm::~CublasLtGemm() = default;

Status CublasLtGemm::Load() { return LoadLt(); }

Result<std::unique_ptr<CublasLtGemm>> CublasLtGemm::Create() {
  CAPPLAN_RETURN_IF_ERROR(LoadLt());
  auto impl = std::make_unique<Impl>();
  CAPPLAN_LT(lt.Create(&impl->handle));
  if (cudaMalloc(&impl->workspace, kWorkspaceBytes) != cudaSuccess) {
    return Status::Internal("cudaMalloc of the cuBLASLt workspace failed");
  }
  return std::unique_ptr<CublasLtGemm>(new CublasLtGemm(std::move(impl)));
}

Status CublasLtGemm::Bf16(const uint16_t* x, const uint16_t* w, uint16_t* y, int m, int n, int k,
                          cudaStream_t stream) {
  return impl_->Run(CUDA_R_16BF, x, w, nullptr, nullptr, y, m, n, k, stream);
}

Status CublasLtGemm::Fp8PerTensor(const uint8_t* x, const float* x_scale, const uint8_t* w,
                                  const float* w_scale, uint16_t* y, int m, int n, int k,
                                  cudaStream_t stream) {
  if (k % 16 != 0) {
    return Status::Invalid("FP8 cuBLASLt GEMM needs K % 16 == 0, got K=" + std::to_string(k));
  }
  if (x_scale == nullptr || w_scale == nullptr) {
    return Status::Invalid("FP8 cuBLASLt GEMM needs both scale pointers");
  }
  return impl_->Run(CUDA_R_8F_E4M3, x, w, x_scale, w_scale, y, m, n, k, stream);
}

}  // namespace capplan::kernels
