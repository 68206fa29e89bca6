# End-to-end tests of history (compare, trend, tag): the real dlbench binary and null runner.
dlbench_add_test(history_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/history_e2e_test.cc
  DEPS dlbench::common nlohmann_json::nlohmann_json LABELS e2e)
add_dependencies(history_e2e_test dlbench dlbench-null)
dlbench_add_test(runs_admin_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/runs_admin_e2e_test.cc
  DEPS dlbench::common dlbench::store LABELS e2e)
add_dependencies(runs_admin_e2e_test dlbench dlbench-null)
