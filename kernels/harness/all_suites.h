// One call that registers every measurement suite the project has.
#ifndef CAPPLAN_KERNELS_HARNESS_ALL_SUITES_H_
#define CAPPLAN_KERNELS_HARNESS_ALL_SUITES_H_

namespace capplan::kernels {

// Idempotent. Lives in the capplan_kernel_suites library.
void RegisterAllSuites();

// Each kernel area defines its own registration function.
void RegisterAttentionSuites();  // kernels/attention/attention_suites.cc
void RegisterGemmSuites();       // kernels/gemm/gemm_suites.cc
void RegisterMoeSuites();        // kernels/moe/moe_suites.cc

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_HARNESS_ALL_SUITES_H_
