# The harness's own overhead (issue 21: under 50 ns per recorded step, under 5 ms fixed cost per
# cell). Run: build/bin/dlbench-bench-harness --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
add_executable(dlbench-bench-harness ${CMAKE_CURRENT_LIST_DIR}/harness_bench.cc)
target_link_libraries(dlbench-bench-harness PRIVATE dlbench::warnings dlbench::orchestrator dlbench::store
                      benchmark::benchmark)
target_compile_definitions(dlbench-bench-harness PRIVATE DLBENCH_BIN_DIR="${CMAKE_BINARY_DIR}/bin")
add_dependencies(dlbench-bench-harness dlbench-null)
