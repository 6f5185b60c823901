#include "kernels/harness/all_suites.h"

namespace capplan::kernels {

void RegisterAllSuites() {
  static bool done = false;
  if (done) return;
  done = true;
  RegisterAttentionSuites();
  // Kernels II: add `RegisterGemmSuites(); RegisterMoeSuites();` on this line.
}

}  // namespace capplan::kernels
