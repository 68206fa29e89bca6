# The load generator's own overhead with a null system under test (issue 11: at least 2 M
# queries/s issued and completed single-threaded offline; under 1 us added latency per query in
# single_stream). Run: build/bin/dlbench-bench-load
if(TARGET dlbench::load)
  add_executable(dlbench-bench-load ${CMAKE_CURRENT_LIST_DIR}/load_bench.cc)
  target_link_libraries(dlbench-bench-load PRIVATE dlbench::load benchmark::benchmark)
endif()
