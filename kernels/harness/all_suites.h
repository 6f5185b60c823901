// One call that registers every measurement suite the project has.
#ifndef CAPPLAN_KERNELS_HARNESS_ALL_SUITES_H_
#define CAPPLAN_KERNELS_HARNESS_ALL_SUITES_H_

namespace capplan::kernels {

// Idempotent. Lives in the capplan_kernel_suites library.
void RegisterAllSuites();

// Each kernel area defines its own registration function.
void RegisterAttentionSuites();  // kernels/attention/attention_suites.cc
void RegisterGemmSuites();       // kernels/gemm (Kernels II)
void RegisterMoeSuites();        // kernels/moe (Kernels II)

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_HARNESS_ALL_SUITES_H_
