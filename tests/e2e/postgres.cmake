# The throwaway PostgreSQL cluster (scripts/pg-test-cluster.sh) as the CTest fixture "postgres":
# started before the first test that requires it and stopped after the last, so `ctest -R` of any
# one of them still gets a server. Without PostgreSQL's server binaries the start is skipped
# (exit 77) and the tests skip with the reason, unless DLBENCH_REQUIRE_POSTGRES=1 (scripts/test.sh),
# which makes it a failure. The store tests (src/store) require the same fixture.
add_test(NAME PostgresTestClusterStart
         COMMAND ${PROJECT_SOURCE_DIR}/scripts/pg-test-cluster.sh start ${DLBENCH_PG_TEST_STATE})
set_tests_properties(PostgresTestClusterStart PROPERTIES FIXTURES_SETUP postgres SKIP_RETURN_CODE 77
                     TIMEOUT 120 LABELS "unit;postgres")
add_test(NAME PostgresTestClusterStop
         COMMAND ${PROJECT_SOURCE_DIR}/scripts/pg-test-cluster.sh stop ${DLBENCH_PG_TEST_STATE})
set_tests_properties(PostgresTestClusterStop PROPERTIES FIXTURES_CLEANUP postgres TIMEOUT 120
                     LABELS "unit;postgres")

# The PostgreSQL store end to end: the real dlbench binary and null runner against the cluster
# (and private clusters for the server restart tests).
if(TARGET dlbench AND TARGET dlbench::store AND TARGET PkgConfig::DLBENCH_LIBPQ)
  dlbench_add_test(postgres_e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/postgres_e2e_test.cc
    DEPS dlbench::store dlbench::common LABELS e2e FIXTURES postgres)
  if(TARGET postgres_e2e_test)
    target_compile_definitions(postgres_e2e_test PRIVATE DLBENCH_PG_TEST_STATE="${DLBENCH_PG_TEST_STATE}")
    add_dependencies(postgres_e2e_test dlbench dlbench-null)
  endif()
endif()
