# End-to-end tests of `run --shard K/N`: one matrix split over concurrent dlbench processes that
# share one database (as one process per GPU would), and resuming one interrupted shard.
dlbench_add_test(shard_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/shard_e2e_test.cc
  DEPS dlbench::store dlbench::common SQLite::SQLite3 LABELS e2e)
add_dependencies(shard_e2e_test dlbench dlbench-null)
