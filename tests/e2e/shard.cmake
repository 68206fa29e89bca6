# End-to-end tests of `run --shard K/N`: one matrix split over concurrent dlbench processes that
# share one database (as one process per GPU would), and resuming one interrupted shard.
dlbench_add_test(shard_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/shard_e2e_test.cc
  DEPS dlbench::store dlbench::common SQLite::SQLite3 LABELS e2e)
add_dependencies(shard_e2e_test dlbench dlbench-null)

# Sweeps: shards of one plan named by --sweep read as one run by runs --sweeps, show, compare,
# report and export (issue 23).
dlbench_add_test(sweep_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/sweep_e2e_test.cc
  DEPS dlbench::common LABELS e2e)
add_dependencies(sweep_e2e_test dlbench dlbench-null)
