# capplan-kernel-bench: runs the registered measurement suites and writes a
# capplan.measurements.v1 file (engine/device/run.sh drives it on the H200).
# Included from kernels/harness/CMakeLists.txt so it needs no edit of
# engine/CMakeLists.txt.
add_executable(capplan_kernel_bench ${CMAKE_CURRENT_LIST_DIR}/kernel_bench.cc)
target_link_libraries(capplan_kernel_bench PRIVATE capplan_kernel_suites capplan_common
                      Boost::program_options)
set_target_properties(capplan_kernel_bench PROPERTIES OUTPUT_NAME capplan-kernel-bench
                      RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
