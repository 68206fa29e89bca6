# The monitor's own cost (issue: under 1% of one core at 10 Hz): one Sample() of each sampler,
# then the monitor thread's CPU time over 5 s at 10 Hz. Run: build/bin/dlbench-bench-monitor
add_executable(dlbench-bench-monitor ${CMAKE_CURRENT_LIST_DIR}/monitor_bench.cc)
target_link_libraries(dlbench-bench-monitor PRIVATE dlbench::warnings dlbench::monitor dlbench::monitor_fakes
                      benchmark::benchmark)
