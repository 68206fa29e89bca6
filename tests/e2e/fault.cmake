# End-to-end tests of the driver under fire: runner faults through the real binary, a second
# resume, Ctrl-C with a hung runner, SIGKILL at 50 moments (issue 19).
if(TARGET dlbench AND TARGET dlbench::store)
  dlbench_add_test(fault_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/fault_e2e_test.cc
    DEPS dlbench::store dlbench::record dlbench::orchestrator dlbench::common SQLite::SQLite3 LABELS e2e)
  add_dependencies(fault_e2e_test dlbench dlbench-null)
endif()
