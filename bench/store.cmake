# The store's cost per cell on SQLite and PostgreSQL side by side (issue: PostgreSQL within 3x of
# SQLite for a cell of 10,000 steps and its series). Run: build/bin/dlbench-bench-store
if(TARGET dlbench::store AND TARGET PkgConfig::DLBENCH_LIBPQ AND TARGET GTest::gtest)
  add_executable(dlbench-bench-store ${CMAKE_CURRENT_LIST_DIR}/store_bench.cc)
  # GTest only for the test-cluster helpers' header (store/postgres/pg_test_util.h).
  target_link_libraries(dlbench-bench-store PRIVATE dlbench::store GTest::gtest)
  target_compile_options(dlbench-bench-store PRIVATE -Wall -Wextra -Wno-missing-field-initializers)
  target_compile_definitions(dlbench-bench-store PRIVATE DLBENCH_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                             DLBENCH_PG_TEST_STATE="${DLBENCH_PG_TEST_STATE}")
  if(DLBENCH_BUILD_TESTS)
    # That it runs and prints its comparison; speed is reported, never asserted.
    add_test(NAME StoreBenchRunsAgainstBothBackends COMMAND dlbench-bench-store --steps 1000 --repeat 3)
    set_tests_properties(StoreBenchRunsAgainstBothBackends PROPERTIES LABELS "unit;postgres" TIMEOUT 300
                         PASS_REGULAR_EXPRESSION "ratio +[0-9.]+ \\(postgresql median / sqlite median"
                         SKIP_REGULAR_EXPRESSION "cannot start a PostgreSQL server: no PostgreSQL server")
  endif()
endif()
