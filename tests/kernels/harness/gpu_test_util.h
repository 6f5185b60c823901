// For GPU tests (label `gpu`): skip cleanly when no CUDA device is present.
// Use as the first statement of a test body: CAPPLAN_REQUIRE_CUDA_DEVICE();
#ifndef CAPPLAN_TESTS_KERNELS_HARNESS_GPU_TEST_UTIL_H_
#define CAPPLAN_TESTS_KERNELS_HARNESS_GPU_TEST_UTIL_H_

#include <gtest/gtest.h>

#include "kernels/harness/cuda_timer.h"

#define CAPPLAN_REQUIRE_CUDA_DEVICE()                                                   \
  do {                                                                                  \
    const std::string _capplan_why = ::capplan::kernels::CudaDeviceUnavailableReason(); \
    if (!_capplan_why.empty()) GTEST_SKIP() << _capplan_why;                            \
  } while (0)

#define CAPPLAN_ASSERT_OK(expr)                            \
  do {                                                     \
    const ::capplan::Status _capplan_s = (expr);           \
    ASSERT_TRUE(_capplan_s.ok()) << _capplan_s.ToString(); \
  } while (0)

#endif  // CAPPLAN_TESTS_KERNELS_HARNESS_GPU_TEST_UTIL_H_
