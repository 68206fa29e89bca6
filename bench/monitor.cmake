# The monitor's own cost (issue: under 1% of one core at 10 Hz): one Sample() of each sampler,
# then the monitor thread's CPU time over 5 s at 10 Hz. Run: build/bin/dlbench-bench-monitor
if(TARGET dlbench::monitor)
  add_executable(dlbench-bench-monitor ${CMAKE_CURRENT_LIST_DIR}/monitor_bench.cc)
  target_link_libraries(dlbench-bench-monitor PRIVATE dlbench::monitor benchmark::benchmark)
  target_compile_options(dlbench-bench-monitor PRIVATE -Wall -Wextra)
endif()
