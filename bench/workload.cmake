# Workload generation and trace parsing throughput (sim/workload).
#   build-DIR/bench/workload_bench [--benchmark_filter=...]
add_executable(workload_bench ${CMAKE_CURRENT_LIST_DIR}/workload_bench.cc)
target_link_libraries(workload_bench PRIVATE capplan_sim_workload benchmark::benchmark)
# Tiny smoke run so the benchmark keeps building and running under ctest.
add_test(NAME workload_bench_smoke
         COMMAND workload_bench --benchmark_min_time=0.001 --benchmark_filter=BM_OpenLoop)
