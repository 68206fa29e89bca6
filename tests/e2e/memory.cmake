# End-to-end tests of memory limits (docs/memory.md) through the real dlbench binary and
# dlbench-null's memory model: memory_cap, its mechanisms, the allocator settings, and their config errors.
dlbench_add_test(memory_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/memory_e2e_test.cc
  DEPS dlbench::common dlbench::config dlbench::orchestrator LABELS e2e)
add_dependencies(memory_e2e_test dlbench dlbench-null)
# batch_size / seq_len / image_size: max under a cap, against brute-force sweeps (the same MemoryE2E
# suite, so scripts/sanitize.sh's filter covers both files).
dlbench_add_test(memory_search_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/memory_search_e2e_test.cc
  DEPS dlbench::common dlbench::config dlbench::orchestrator LABELS e2e)
add_dependencies(memory_search_e2e_test dlbench dlbench-null)
# A boundary search's probes sharing runner processes and aimed by their peaks (docs/memory.md
# "Probes in one process").
dlbench_add_test(boundary_process_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/boundary_process_e2e_test.cc
  DEPS dlbench::common LABELS e2e)
add_dependencies(boundary_process_e2e_test dlbench dlbench-null)
# bench/gpu/memory-caps.sh's lanes, store copies and seeds on the CPU (DRY=1 with dlbench-torch):
# the GPU table costs device time, so its plumbing is checked here.
if(TARGET dlbench-torch)
  add_test(NAME MemoryCapsScriptDryRun
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/scripts/memory_caps_dry_test.sh ${PROJECT_SOURCE_DIR}
                   ${PROJECT_BINARY_DIR})
  # torch: it runs dlbench-torch (the sanitizer stage builds no LibTorch runner and leaves torch out).
  set_tests_properties(MemoryCapsScriptDryRun PROPERTIES LABELS "e2e;torch" TIMEOUT 600)
endif()
# bench/gpu/lane_replay.py (a caps table's times through the lane scheduler) on a hand-made table.
add_test(NAME LaneReplayScript COMMAND bash ${PROJECT_SOURCE_DIR}/tests/scripts/lane_replay_test.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(LaneReplayScript PROPERTIES LABELS unit TIMEOUT 60)
