# capplan_add_test(NAME SOURCES ... LIBS ... [LABELS gpu]): one GoogleTest
# binary whose cases ctest discovers. Device tests carry LABELS gpu and
# GTEST_SKIP() without a CUDA device. Included by the main project's tests/
# and by the device build (engine/device/kernels_only), so both register
# tests the same way.
include(GoogleTest)
set(CAPPLAN_TEST_ROOT ${CMAKE_CURRENT_LIST_DIR}/..)
function(capplan_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  # tests/test_util/ headers are included as "tests/test_util/...".
  target_include_directories(${name} PRIVATE ${CAPPLAN_TEST_ROOT})
  if(T_LABELS)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 120 PROPERTIES LABELS "${T_LABELS}")
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 120)
  endif()
endfunction()
