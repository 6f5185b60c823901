#include "kernels/harness/all_suites.h"

namespace capplan::kernels {

void RegisterAllSuites() {
  static bool done = false;
  if (done) return;
  done = true;
  RegisterAttentionSuites();
  RegisterGemmSuites();  // kernels/gemm/gemm_suites.cc
  RegisterMoeSuites();   // kernels/moe/moe_suites.cc
}

}  // namespace capplan::kernels
