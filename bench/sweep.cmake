# Sweep throughput (sim/sweep): 1,000 points of 10k-request simulations.
#   build-DIR/bench/sweep_bench --benchmark_filter=BM_Sweep/1000/10000
add_executable(sweep_bench ${CMAKE_CURRENT_LIST_DIR}/sweep_bench.cc)
target_link_libraries(sweep_bench PRIVATE capplan_sim_sweep benchmark::benchmark)
# Tiny smoke run (10 points x 200 requests) so the benchmark keeps working.
add_test(NAME sweep_bench_smoke COMMAND sweep_bench --benchmark_filter=BM_Sweep/10/200)
