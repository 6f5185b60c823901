// Parallel layouts the models/ tests build their cases on.
#ifndef CAPPLAN_TESTS_MODELS_LAYOUTS_H_
#define CAPPLAN_TESTS_MODELS_LAYOUTS_H_

#include "models/types.h"

namespace capplan::models::test_layouts {

// One instance of `tp` GPUs, tensor parallel over all of them.
inline ParallelLayout Tp(int tp) {
  ParallelLayout l;
  l.gpus = tp;
  l.tp = tp;
  return l;
}

// `n` GPUs with DP attention: each rank holds all attention heads (dp = n);
// the rest is tensor parallel over all n.
inline ParallelLayout DpAttention(int n) {
  ParallelLayout l = Tp(n);
  l.dp_attention = true;
  l.dp = n;
  return l;
}

}  // namespace capplan::models::test_layouts

#endif  // CAPPLAN_TESTS_MODELS_LAYOUTS_H_
