# Simulator speed: 100k requests of study (a) (sim/).
#   build-DIR/bench/sim_bench [--benchmark_filter=...]
add_executable(sim_bench ${CMAKE_CURRENT_LIST_DIR}/sim_bench.cc)
target_link_libraries(sim_bench PRIVATE capplan_sim benchmark::benchmark)
# Tiny smoke run so the benchmark keeps building and running under ctest.
add_test(NAME sim_bench_smoke COMMAND sim_bench --benchmark_filter=BM_StudyA_1k/1 --benchmark_min_time=0.001)
