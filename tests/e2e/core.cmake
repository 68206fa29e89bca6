# End-to-end tests of the core: the real dlbench binary with the null runner (and the Python client).
dlbench_add_test(core_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/core_e2e_test.cc
  DEPS dlbench::store dlbench::common SQLite::SQLite3 LABELS e2e)
add_dependencies(core_e2e_test dlbench dlbench-null)
