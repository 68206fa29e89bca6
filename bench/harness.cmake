# The harness's own overhead (issue: under 100 ns per recorded step, under 0.3 s per cell).
# Run: build/bin/dlbench-bench-harness
add_executable(dlbench-bench-harness ${CMAKE_CURRENT_LIST_DIR}/harness_bench.cc)
target_link_libraries(dlbench-bench-harness PRIVATE dlbench::warnings dlbench::orchestrator dlbench::store
                      benchmark::benchmark)
target_compile_definitions(dlbench-bench-harness PRIVATE DLBENCH_BIN_DIR="${CMAKE_BINARY_DIR}/bin")
add_dependencies(dlbench-bench-harness dlbench-null)
